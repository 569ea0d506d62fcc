"""Policies (L2): job selection, core selection, policy pairs and backfilling."""
