"""The forwarder's deciding stages: raw objects in, addressed messages out.

Translation, routing and coalescing read and return plain data and import no Temporal or
Kubernetes client, so each is tested without a server or a cluster (tests/unit/forwarder
checks every module in this folder). The watches, the pipeline and the signaller around them
do the I/O.
"""
