"""Caldera's validating admission webhook: the Volcano admission rules that need other objects.

CRD schemas and CEL rules (`deploy/crds/`) check one object alone; what they cannot check is a
reference to another object: that a Job's or PodGroup's queue exists and is Open, that a Job
goes to a leaf queue, that a Queue's parent exists without forming a cycle or a tree
deeper than `--max-queue-depth`, and that a NamespaceQueue hangs only where its namespace is
allowed. Those are decided here.

- `rules` decides (pure: no Kubernetes client, no HTTP), from the AdmissionReview request and
  a small lookup (`reads`); `namespacequeues` holds the NamespaceQueues' rules;
- `lookup` reads queues, NamespaceQueues and PodGroups from the apiserver with the official
  `kubernetes` client;
- `server` is the HTTPS endpoint the apiserver calls (`caldera webhook`).
"""
