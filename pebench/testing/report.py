"""What a conformance check returns: one :class:`Property` per contract property (pass, fail or skip, with the
number measured), gathered in a :class:`Report` per class; and the option-validation property shared by encodings
and tasks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pebench.errors import OptionError
from pebench.options import Option

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclass(frozen=True)
class Property:
    """One contract property of one class: its status, the number measured (as shown) and what it means."""

    name: str
    status: str
    measured: str
    detail: str

    @property
    def passed(self) -> bool:
        return self.status != FAIL

    def line(self) -> str:
        """``PASS  causality               0  max |change| ...``: one line."""
        return f"  {self.status.upper():<4}  {self.name:<22} {self.measured:>10}  {self.detail}"


@dataclass
class Report:
    """The properties of one encoding or task class (``kind`` is ``encoding`` or ``task``)."""

    kind: str
    name: str
    source: str
    properties: list[Property] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.properties)

    @property
    def failed(self) -> list[str]:
        """The names of the failed properties."""
        return [p.name for p in self.properties if not p.passed]

    def lines(self) -> list[str]:
        verdict = "conforms" if self.passed else "FAILS " + ", ".join(self.failed)
        head = f"{self.kind} {self.name} ({self.source}): {verdict}"
        return [head, *(p.line() for p in self.properties)]

    def add(self, name: str, check: Callable[[], Property]) -> None:
        """Run one property's ``check``; an exception it raises fails that property (with the error, one line)."""
        try:
            self.properties.append(check())
        except Exception as err:  # a contract broken so badly that the measurement itself fails
            self._failed(name, err)

    def built(self, build: Callable[[], Any]) -> Any:
        """What ``build()`` returns; None, with a failed ``builds`` property, when it raises."""
        try:
            return build()
        except Exception as err:
            self._failed("builds", err)
            return None

    def _failed(self, name: str, err: Exception) -> None:
        first = (str(err).strip().splitlines() or [""])[0]
        self.properties.append(Property(name, FAIL, "error", f"{type(err).__name__}: {first}"))


def measured(value: float) -> str:
    """A measured difference as shown: ``0`` when exactly zero, else 3 significant digits."""
    return "0" if value == 0 else f"{value:.3g}"


def bad_values(option: Option) -> list[Any]:
    """Values ``option`` must refuse: outside its choices, below its low or above its high bound, of another type."""
    if option.choices is not None:
        return ["__not_a_choice__"]
    out: list[Any] = []
    if option.low is not None:
        out.append(option.low if option.low_open else option.low - 1)
    if option.high is not None:
        out.append(option.high if option.high_open else option.high + 1)
    if option.type in (int, float):
        out.append("not-a-number")
    return out


def option_errors(owner: str, declared: Mapping[str, Option], build: Callable[[dict[str, Any]], Any]) -> Property:
    """Every invalid option value (:func:`bad_values`) and an unknown option name must raise a one-line
    :class:`~pebench.errors.OptionError` from ``build(options)``; measured: how many of the tries did."""
    tries: list[dict[str, Any]] = [{"__no_such_option__": 1}]
    tries += [{name: value} for name, option in declared.items() for value in bad_values(option)]
    wrong = []
    for options in tries:
        try:
            build(options)
        except OptionError as err:
            if "\n" in str(err).strip():
                wrong.append(f"{options}: a multi-line error")
            continue
        except Exception as err:
            wrong.append(f"{options}: {type(err).__name__}, not an OptionError")
            continue
        wrong.append(f"{options}: accepted")
    ok = len(tries) - len(wrong)
    detail = (f"invalid values and an unknown name refused with a one-line OptionError ({owner})" if not wrong
              else "; ".join(wrong[:2]))  # fmt: skip
    return Property("option errors", PASS if not wrong else FAIL, f"{ok}/{len(tries)}", detail)
