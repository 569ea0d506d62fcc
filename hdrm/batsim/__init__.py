"""hdrm.batsim."""
