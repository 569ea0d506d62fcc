"""hdrm.sim."""
