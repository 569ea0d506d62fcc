"""hdrm.agents."""
