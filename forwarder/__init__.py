"""The watch-forwarder: Kubernetes watch events in, coalesced Temporal signals out."""
