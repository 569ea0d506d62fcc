"""Batsim compatibility, both ways, over Batsim 4.x's JSON-over-ZeroMQ protocol.

* :mod:`~hdrm.batsim.protocol` and :mod:`~hdrm.batsim.events`: messages, events, validation and
  Batsim's number format;
* :mod:`~hdrm.batsim.adapter`: hdrm's decision core as a PyBatsim scheduler (the ``batsim`` engine),
  and :mod:`~hdrm.batsim.process`: running the real ``batsim`` binary with it;
* :mod:`~hdrm.batsim.server` (on :mod:`~hdrm.batsim.simulator`, :mod:`~hdrm.batsim.hosts`,
  :mod:`~hdrm.batsim.platform_hosts` and :mod:`~hdrm.batsim.jobs`): ``hdrm serve``, Batsim's side
  of the protocol on the built-in physics;
* :mod:`~hdrm.batsim.engine` and :mod:`~hdrm.batsim.env_bridge`: the ``batsim`` engine of
  ``hdrm replay``, ``hdeeprm-launch`` and the Gymnasium environment (one Batsim run per episode,
  each decision handed over from the environment's ``step()``).

This is the only package that imports pyzmq, procset and pybatsim (``batsim``); importing
``hdrm.batsim`` itself imports none of them.
"""
