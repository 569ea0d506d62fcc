"""Platform layer (L1): the resource hierarchy, the type library, the loader and the SimGrid export."""
