"""What Caldera does with every field of Volcano's Job, Queue and PodGroup specs.

One table per API group (`vcjob`, `scheduling`), each field honoured (the module that reads
it), accepted without effect (why) or refused at admission (where), as `entries` defines
them; `page` prints docs/reference/volcano-api-fields.md from them. A unit test walks the CRD
schemas in deploy/crds/ and fails on a field with no entry, or an entry for no field, so a
field Volcano adds must be classified before it can be stored (STYLE.md, house rule 2).

Pure data: nothing here reads a file; the table names its readers as strings.
"""
