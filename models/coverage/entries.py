"""What Caldera does with one field of a Volcano API object: the three answers the coverage
table (`models.coverage`) may give, and the table of one kind.

Every field a user can write is honoured (a named module reads it), accepted without effect
(with why), or refused where it enters (admission names it). There is no fourth answer, so a
field cannot be stored and silently ignored (STYLE.md, house rule 2).

Pure data: nothing here reads a file or imports a reader; the strings name modules so the
generated page can point at them, and a unit test checks the table against the CRD schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Honoured:
    """A module of Caldera reads the field and acts on it as Volcano does."""

    where: str  # the files that read it, repository paths joined by ", "
    note: str = ""  # what of Volcano's behaviour is left out; empty: nothing


@dataclass(frozen=True)
class WithoutEffect:
    """Stored and accepted, but nothing in Caldera acts on it."""

    why: str  # one sentence: why accepting it is harmless, or what Volcano does with it


@dataclass(frozen=True)
class Refused:
    """A non-empty value is refused at admission, the message naming the field."""

    where: str  # the admission module that refuses it, a repository path
    why: str  # what Volcano would do that Caldera does not


Coverage = Honoured | WithoutEffect | Refused


@dataclass(frozen=True)
class KindCoverage:
    """One kind's fields, each path written from the object's root with `[]` for a list item
    (`spec.tasks[].name`). An entry covers its path and everything below it, which is how the
    pod template, owned by Kubernetes, is one entry."""

    kind: str
    api_version: str
    crd: str  # the CRD's file under deploy/crds/
    fields: Mapping[str, Coverage]
