"""Shared pydantic configuration for Kubernetes-shaped API types.

API objects are read from and written to the cluster, so they must survive a round trip with
nothing lost: fields Caldera does not know yet (a newer Volcano, a vendor extension) are kept
(`extra="allow"`) and written back under their wire names. Attributes are snake_case in Python
and camelCase on the wire. `dump` leaves out unset optional fields so a round trip never adds
keys the user did not write.

Must not import temporalio, kubernetes or anything with I/O: this layer is pure.
"""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from models.quantity import SCHEMA_PATTERN

INT32_MAX = 2**31 - 1

Int32 = Annotated[int, Field(ge=-(2**31), le=INT32_MAX, json_schema_extra={"format": "int32"})]
NonNegInt32 = Annotated[int, Field(ge=0, le=INT32_MAX, json_schema_extra={"format": "int32"})]

# A Kubernetes resource.Quantity as written in YAML: "500m", "4Gi", 2. The pattern is for the
# CRD only (an object stored before it was there still parses).
Quantity = Annotated[
    int | str,
    Field(json_schema_extra={"x-kubernetes-int-or-string": True, "pattern": SCHEMA_PATTERN}),
]
ResourceList = dict[str, Quantity]


class ApiModel(BaseModel):
    """Base of every API type: camelCase wire names, frozen, unknown fields preserved."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        extra="allow",
    )

    def dump(self) -> dict[str, Any]:
        """The object as the apiserver expects it: camelCase keys, unset fields absent."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def load(cls, data: dict[str, Any]) -> Self:
        return cls.model_validate(data)
