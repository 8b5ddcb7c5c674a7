"""Resource vectors: parsing, arithmetic and Volcano's epsilon comparisons (C4)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from pydantic import ValidationError

from scheduling.api.vectors import (
    EMPTY,
    Missing,
    Resources,
    dominant_share,
    share,
    total,
)

GPU = "nvidia.com/gpu"
GI = 2**30


def r(cpu: int | Fraction = 0, mem: int = 0, pods: int = 0, **scalars: int) -> Resources:
    return Resources.of(cpu, mem, pods, {k.replace("_", "/"): v for k, v in scalars.items()})


PARSE = [
    pytest.param({"cpu": "500m"}, r(500), id="milli-cpu"),
    pytest.param({"cpu": 2}, r(2000), id="whole-cpu-int"),
    pytest.param({"cpu": "1.5"}, r(1500), id="fractional-cpu"),
    pytest.param({"memory": "1Gi"}, r(mem=GI), id="memory-binary"),
    pytest.param({"memory": "1G"}, r(mem=10**9), id="memory-decimal"),
    pytest.param({"pods": "110"}, r(pods=110), id="pods"),
    pytest.param({GPU: "2"}, Resources.of(scalars={GPU: 2000}), id="extended-in-milli"),
    pytest.param(
        {"hugepages-2Mi": "4Mi"},
        Resources.of(scalars={"hugepages-2Mi": 4 * 2**20 * 1000}),
        id="hugepages",
    ),
    pytest.param({"ephemeral-storage": "10Gi"}, EMPTY, id="ephemeral-ignored"),
    pytest.param(None, EMPTY, id="none"),
]


@pytest.mark.parametrize(("resource_list", "expected"), PARSE)
def test_from_resource_list_uses_volcano_units(
    resource_list: dict[str, str] | None, expected: Resources
) -> None:
    assert Resources.from_resource_list(resource_list) == expected


def test_to_resource_list_round_trips() -> None:
    original = {"cpu": "1500m", "memory": "1073741824", "pods": "3", GPU: "1"}
    assert Resources.from_resource_list(original).to_resource_list() == original


ARITHMETIC = [
    pytest.param(r(1000, 5, 1).add(r(500, 1, 1, x_y=3)), r(1500, 6, 2, x_y=3), id="add"),
    pytest.param(r(1000, 5).sub(r(1500, 1)), r(-500, 4), id="sub-may-go-negative"),
    pytest.param(r(1000, 5, x_y=10).multiply(Fraction(6, 5)), r(1200, 6, x_y=12), id="multiply"),
    pytest.param(r(1000, 5, x_y=1).exceeded_part(r(400, 9)), r(600, 0, x_y=1), id="exceeded"),
    pytest.param(
        r(1000, 5, a_b=4).min_dimension(r(400, 9), Missing.INFINITY),
        r(400, 5, a_b=4),
        id="min-missing-infinity",
    ),
    pytest.param(
        r(1000, 5, a_b=4).min_dimension(r(400, 9), Missing.ZERO),
        r(400, 5, a_b=0),
        id="min-missing-zero",
    ),
    pytest.param(r(1000, 5).max_dimension(r(400, 9, a_b=1)), r(1000, 9, a_b=1), id="max-union"),
    pytest.param(total([r(1), r(2), r(3)]), r(6), id="total"),
    pytest.param(total([]), EMPTY, id="total-empty"),
]


@pytest.mark.parametrize(("got", "expected"), ARITHMETIC)
def test_arithmetic(got: Resources, expected: Resources) -> None:
    assert got == expected


LESS_EQUAL = [
    pytest.param(r(1000, 10), r(1000, 10), Missing.ZERO, True, id="equal"),
    pytest.param(r(1000, 10), r(999, 10), Missing.ZERO, False, id="cpu-over"),
    pytest.param(r(Fraction(100005, 100)), r(1000), Missing.ZERO, True, id="within-epsilon"),
    pytest.param(r(1000, 11), r(1000, 10), Missing.ZERO, False, id="memory-over"),
    pytest.param(r(0, 0, a_b=1), r(5, 5), Missing.ZERO, False, id="scalar-missing-zero"),
    pytest.param(r(0, 0, a_b=1), r(5, 5), Missing.INFINITY, True, id="scalar-missing-infinity"),
    pytest.param(r(0, 0, 200), r(0, 0, 1), Missing.ZERO, True, id="pods-ignored"),
]


@pytest.mark.parametrize(("left", "right", "missing", "expected"), LESS_EQUAL)
def test_less_equal(left: Resources, right: Resources, missing: Missing, expected: bool) -> None:
    assert left.less_equal(right, missing) is expected


WITH_DIMENSION = [
    pytest.param(r(5000, 1), r(1000, 10), r(0, 1), True, id="cpu-not-requested"),
    pytest.param(r(5000, 1), r(1000, 10), r(1, 0), False, id="cpu-requested"),
    pytest.param(r(0, 0, a_b=3), r(0, 0, a_b=2), r(0, 0, a_b=1), False, id="scalar-requested"),
    pytest.param(r(0, 0, a_b=3), r(0, 0), r(1, 1), True, id="scalar-not-requested"),
]


@pytest.mark.parametrize(("left", "right", "wanted", "expected"), WITH_DIMENSION)
def test_less_equal_with_dimension(
    left: Resources, right: Resources, wanted: Resources, expected: bool
) -> None:
    assert left.less_equal_with_dimension(right, wanted) is expected


INSUFFICIENT = [
    pytest.param(r(1000, 10, 1), r(1000, 10, 0), (), id="fits-pods-aside"),
    pytest.param(r(2000, 10), r(1000, 5), ("cpu", "memory"), id="cpu-and-memory"),
    pytest.param(r(0, 0, a_b=1000), r(4000, 10), ("a/b",), id="scalar-absent-on-node"),
    pytest.param(r(0, 10), r(-500, 10), (), id="zero-request-on-overcommitted-node"),
]


@pytest.mark.parametrize(("request_", "idle", "expected"), INSUFFICIENT)
def test_insufficient(request_: Resources, idle: Resources, expected: tuple[str, ...]) -> None:
    assert request_.insufficient(idle) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(EMPTY, True, id="empty"),
        pytest.param(r(0, 0, 1), True, id="pods-only"),
        pytest.param(r(Fraction(1, 20)), True, id="below-epsilon"),
        pytest.param(r(1), False, id="one-milli-cpu"),
        pytest.param(r(0, 0, x_y=1), False, id="scalar"),
    ],
)
def test_is_empty(value: Resources, expected: bool) -> None:
    assert value.is_empty() is expected


@pytest.mark.parametrize(
    ("allocated", "deserved", "expected"),
    [
        pytest.param(0, 0, Fraction(0), id="zero-over-zero"),
        pytest.param(5, 0, Fraction(1), id="x-over-zero"),
        pytest.param(1, 4, Fraction(1, 4), id="ratio"),
    ],
)
def test_share(allocated: int, deserved: int, expected: Fraction) -> None:
    assert share(Fraction(allocated), Fraction(deserved)) == expected


def test_dominant_share_takes_the_largest_dimension() -> None:
    assert dominant_share(r(1000, 6 * GI), r(4000, 8 * GI)) == Fraction(3, 4)


def test_scalars_are_sorted_whatever_the_input_order() -> None:
    assert list(Resources(scalars={"b/x": 1, "a/y": 2}).scalars) == ["a/y", "b/x"]


def test_fractions_and_integers_survive_json() -> None:
    value = Resources.of(Fraction(8000, 3), 2**40, 3, {GPU: Fraction(1, 3)})
    again = Resources.model_validate_json(value.model_dump_json())
    assert again == value
    assert isinstance(again.memory, int)
    assert again.milli_cpu == Fraction(8000, 3)


def test_quantities_round_up_like_volcano() -> None:
    assert Resources.from_resource_list({"cpu": "0.0001", "memory": "0.5"}) == r(1, 1)


def test_the_fast_constructor_makes_the_same_vector_as_validation() -> None:
    """`Resources.of` skips pydantic's construction: it must still be a whole model."""
    fast = Resources.of(1500, 2048, 3, {"nvidia.com/gpu": 2000, "a.b/c": 1})
    slow = Resources.model_validate(
        {
            "milli_cpu": 1500,
            "memory": 2048,
            "pods": 3,
            "scalars": {"nvidia.com/gpu": 2000, "a.b/c": 1},
        }
    )
    assert fast == slow and fast.model_dump() == slow.model_dump()
    assert list(fast.scalars) == ["a.b/c", "nvidia.com/gpu"]
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_copy(update={"pods": 4}).pods == 4
    with pytest.raises(ValidationError):
        fast.pods = 5  # type: ignore[misc]
