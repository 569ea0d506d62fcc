"""SimGrid 3.32's linear max-min system as its ptask_L07 model solves it (``host/solver``
``fairbottleneck``, the default for parallel tasks), with SimGrid's order of float operations.

A :class:`System` holds *constraints* (a host's cpu: its speed in flop/s; a link: its bandwidth
in bytes/s, SHARED or FATPIPE) and *variables* (one per action: a parallel task, a message), tied
by *elements* (a variable's weight on a constraint: the flops of a host, the bytes that cross a
link). :meth:`System.solve` gives each variable its value, the action's rate, as
``FairBottleneck::do_solve`` does:

* every enabled variable with a non-zero weight is *unsaturated*; every active constraint keeps
  ``remaining``, its bound at first;
* in each round, a constraint shares what remains equally among the elements of its
  unsaturated variables (``remaining / n``; a FATPIPE one: ``n = 1``); each unsaturated variable
  grows by the smallest share over weight of its constraints (and no further than its bound);
  each constraint then loses ``weight x growth`` of each of its enabled elements, in the order
  of its element list (a FATPIPE one: the smallest such product, once), clamped to 0 below
  :data:`MAXMIN_PRECISION`; a constraint with nothing left saturates the variables on it.
  A variable keeps the growth of its last round (``mu``), and a constraint subtracts it again in
  later rounds even after the variable saturated, as SimGrid does;
* a variable with no weight anywhere gets the value 1 (0 while disabled).

The element lists keep SimGrid's order (a new element first; an enabled variable's elements
first, a disabled one's moved to the disabled list), since the subtractions follow it. The
order of the variables and of the active constraints changes no value and is not kept.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

#: SimGrid's ``maxmin/precision``: a constraint with less left has none.
MAXMIN_PRECISION = 1e-5
_DBL_MAX = sys.float_info.max


@dataclass(eq=False)
class Element:
    """A variable's weight on a constraint."""

    constraint: "Constraint"
    variable: "Variable"
    weight: float


@dataclass(eq=False)
class Constraint:
    """A resource: its bound (flop/s or bytes/s) and the elements on it (enabled first-new)."""

    bound: float
    fatpipe: bool = False
    name: str = ""
    enabled: list[Element] = field(default_factory=list)
    disabled: list[Element] = field(default_factory=list)
    remaining: float = 0.0
    usage: float = 0.0


@dataclass(eq=False)
class Variable:
    """An action's rate: its penalty (0: disabled), bound (<= 0: none) and value."""

    penalty: float = 1.0
    bound: float = -1.0
    value: float = 0.0
    mu: float = 0.0
    elements: list[Element] = field(default_factory=list)
    unsaturated: bool = False
    first: dict[Constraint, Element] = field(default_factory=dict)  # its first on each


class System:
    """SimGrid's lmm system with the fair-bottleneck solver."""

    def __init__(self) -> None:
        self.variables: list[Variable] = []
        self.modified = False

    def variable(self, penalty: float = 1.0, bound: float = -1.0) -> Variable:
        """``variable_new``."""
        var = Variable(penalty, bound)
        self.variables.append(var)
        self.modified = True
        return var

    def expand(self, cnst: Constraint, var: Variable, weight: float, force: bool = False) -> None:
        """``System::expand``: add ``weight`` to ``var``'s element on ``cnst`` (a FATPIPE one:
        keep the larger), or a new element (always with ``force``, as L07 does for hosts)."""
        self.modified = True
        elem = var.first.get(cnst)
        if elem is not None and not force:
            elem.weight = max(elem.weight, weight) if cnst.fatpipe else elem.weight + weight
            return
        elem = Element(cnst, var, weight)
        var.elements.append(elem)
        var.first.setdefault(cnst, elem)
        if var.penalty != 0.0:
            cnst.enabled.insert(0, elem)
        else:
            cnst.disabled.append(elem)

    def set_penalty(self, var: Variable, penalty: float) -> None:
        """``update_variable_penalty``: 0 disables the variable, > 0 enables it."""
        if penalty == var.penalty:
            return
        self.modified = True
        if penalty > 0 and var.penalty <= 0:
            var.penalty = penalty
            for elem in var.elements:
                elem.constraint.disabled.remove(elem)
                elem.constraint.enabled.insert(0, elem)
        elif penalty <= 0 < var.penalty:
            for elem in var.elements:
                elem.constraint.enabled.remove(elem)
                elem.constraint.disabled.append(elem)
            var.penalty, var.value = 0.0, 0.0
        else:
            var.penalty = penalty

    def set_bound(self, var: Variable, bound: float) -> None:
        """``update_variable_bound``."""
        self.modified = True
        var.bound = bound

    def set_constraint_bound(self, cnst: Constraint, bound: float) -> None:
        """``update_constraint_bound``."""
        self.modified = True
        cnst.bound = bound

    def free(self, var: Variable) -> None:
        """``variable_free``: the variable and its elements leave the system."""
        self.modified = True
        for elem in var.elements:
            group = elem.constraint.enabled if var.penalty > 0 else elem.constraint.disabled
            group.remove(elem)
        var.elements.clear()
        var.first.clear()
        self.variables.remove(var)

    def solve(self) -> None:
        """``System::solve``: nothing when unmodified, else ``FairBottleneck::do_solve``."""
        if not self.modified:
            return
        self.modified = False
        unsaturated: list[Variable] = []
        cnsts: dict[int, Constraint] = {}
        for var in self.variables:
            var.value = 0.0
            if var.penalty > 0.0 and any(e.weight != 0.0 for e in var.elements):
                var.unsaturated = True
                unsaturated.append(var)
                for cnst in var.first:  # its constraints, once each
                    cnsts.setdefault(id(cnst), cnst)
            elif var.penalty > 0.0:
                var.value = 1.0
        pending = list(cnsts.values())
        for cnst in pending:
            cnst.remaining, cnst.usage = cnst.bound, 0.0
        while unsaturated:
            pending = _shares(pending)
            for var in unsaturated:
                _grow(var)
            unsaturated = [v for v in unsaturated if v.unsaturated]
            pending = _consume(pending)
            unsaturated = [v for v in unsaturated if v.unsaturated]


def _shares(cnsts: list[Constraint]) -> list[Constraint]:
    """Each constraint's share per unsaturated element; those with none leave."""
    kept = []
    for cnst in cnsts:
        cnst.usage = 0.0
        n = 0
        for elem in cnst.enabled:
            if elem.weight > 0 and elem.variable.unsaturated:
                n += 1
        if n > 0 and cnst.fatpipe:
            n = 1
        if n == 0:
            cnst.remaining = 0.0
        else:
            cnst.usage = cnst.remaining / n
            kept.append(cnst)
    return kept


def _grow(var: Variable) -> None:
    """A variable's growth in this round: its smallest share over weight, up to its bound."""
    min_inc = _DBL_MAX
    for elem in var.elements:
        if elem.weight > 0:
            share = elem.constraint.usage / elem.weight
            if share < min_inc:
                min_inc = share
    if var.bound > 0 and var.bound - var.value < min_inc:
        min_inc = var.bound - var.value
    var.mu = min_inc
    var.value += min_inc
    if var.value == var.bound:
        var.unsaturated = False


def _consume(cnsts: list[Constraint]) -> list[Constraint]:
    """Each constraint loses what its elements took; a spent one saturates its variables."""
    kept = []
    for cnst in cnsts:
        if not cnst.fatpipe:
            for elem in cnst.enabled:
                cnst.remaining -= elem.weight * elem.variable.mu
                if cnst.remaining < MAXMIN_PRECISION:
                    cnst.remaining = 0.0
        else:
            for elem in cnst.enabled:
                taken = elem.weight * elem.variable.mu
                if taken < cnst.usage:
                    cnst.usage = taken
            cnst.remaining -= cnst.usage
            if cnst.remaining < MAXMIN_PRECISION:
                cnst.remaining = 0.0
        if cnst.remaining <= 0.0:
            for elem in cnst.enabled:
                if elem.weight > 0:
                    elem.variable.unsaturated = False
        else:
            kept.append(cnst)
    return kept
