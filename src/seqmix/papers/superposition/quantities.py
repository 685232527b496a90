"""Ordered long ``quantity,value`` rows: the form of every number the superposition analyses produce."""

from __future__ import annotations


class Quantities:
    """Ordered ``quantity,value`` rows; a quantity may appear once (a second write is a naming bug)."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self._seen: set[str] = set()

    def add(self, quantity: str, value) -> None:
        if quantity in self._seen:
            raise ValueError(f"quantity {quantity!r} written twice")
        self._seen.add(quantity)
        self.rows.append({"quantity": quantity, "value": float(value)})
