"""hdrm.env."""
