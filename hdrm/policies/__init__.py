"""hdrm.policies."""
