"""Volcano's NamespaceQueue controller as a pure core: where a NamespaceQueue hangs, whether its
namespace may hang there, whether it fits under its parent, and its lifecycle."""
