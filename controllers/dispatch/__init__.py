"""Dispatching a Volcano Job to a worker cluster as a pure core: which cluster (`choose`),
what is mirrored back (`mirror`), and `controller.decide` over the DispatchWorkflow's inputs."""
