"""The ``mapping`` of an EXECUTE_JOB: the job's executors placed on its allocated resources.

Batsim 4.2.1 reads ``"mapping": {"0": "0", "1": "0"}`` as executor -> index of a resource in the
alloc. Several executors may share one resource, so the alloc may be smaller than the job's
request; without a mapping, the alloc must have exactly the requested number of resources.
"""

from __future__ import annotations

from hdrm.errors import ProtocolError


def _executor_map(mapping: object, where: str) -> dict[int, int]:
    """A 'mapping' object as integers, checked as Batsim 4.2.1 reads it."""
    if not isinstance(mapping, dict) or not mapping:
        raise ProtocolError(f"{where}: mapping {mapping!r} must be a non-empty object "
                            "{executor: index in the alloc}, as Batsim 4 requires")
    out = {}
    for key, value in mapping.items():
        try:
            out[int(key)] = int(value)
        except (TypeError, ValueError):
            raise ProtocolError(f"{where}: mapping entry {key!r}: {value!r} is not a pair of "
                                "integers; write executor and resource index as integers (or "
                                "strings of integers), as Batsim 4 requires") from None
    return out


def check_mapping(mapping: object, nb_alloc: int, res: int | None, computing: bool,
                  where: str) -> None:
    """Check an EXECUTE_JOB 'mapping' (executor -> index of a resource in the alloc) as Batsim
    4.2.1 does: executors 0..res-1, each on one of the allocated resources (several may share
    one; then the alloc may be smaller than the request). ``res`` None: any number of
    executors (a ``parallel_homogeneous_total`` job's, whose work is spread over them).

    A ``delay`` job runs the same whatever its mapping (its resources stay idle). A computing
    job (``parallel_homogeneous``) is accepted when each allocated resource runs exactly one
    executor, which is the same computation as without a mapping; several executors on a
    resource are not modelled (the resource would compute several shares).

    Raises:
        ProtocolError: the rule broken, and what to send instead.
    """
    executors = _executor_map(mapping, where)
    for k, (executor, position) in enumerate(sorted(executors.items())):
        if executor != k:
            raise ProtocolError(f"{where}: mapping has no resource for executor {k}; map "
                                f"executors 0..{len(executors) - 1} (Batsim 4 requires it)")
        if not 0 <= position < nb_alloc:
            raise ProtocolError(f"{where}: mapping puts executor {k} on the alloc's resource "
                                f"#{position}, but the alloc has {nb_alloc} (indexes 0.."
                                f"{nb_alloc - 1}), which Batsim 4 refuses; map it to one "
                                "of them")
    if res is not None and len(executors) != res:  # (None: any number, a spread job's)
        raise ProtocolError(f"{where}: mapping has {len(executors)} executors, the job requests "
                            f"{res}, which Batsim 4 refuses; map exactly {res}")
    if computing and sorted(executors.values()) != list(range(nb_alloc)):
        raise ProtocolError(
            f"{where}: mapping {mapping!r} does not run exactly one executor on each of the "
            f"{nb_alloc} allocated resources: hdrm serve models a parallel_homogeneous job with "
            "one executor per resource; map one per resource, or run the real batsim")
