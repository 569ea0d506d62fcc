"""hdrm.core."""
