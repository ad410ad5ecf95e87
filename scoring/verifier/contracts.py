"""The reward contract: which annotation type an instance declares and whether it is scorable.

The contract travels with each instance (annotation-contracts.md). The scorer
never infers it from the response; a contract that does not match the
ground truth makes the annotation unscorable (reward 0, parse_ok 0) with a
reason, never an exception.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .literals import is_mapping
from .records import new_record
from .spec import ANNOTATION_TYPES, RESOLVER_IDS


class ContractCheck(NamedTuple):
    """The declared annotation type (None if unknown) and why it cannot be scored ('' if it can)."""

    annotation_type: str | None
    problem: str

    @property
    def ok(self) -> bool:
        return not self.problem


def type_name(value: Any) -> Any:
    """A type or id string as compared: surrounding white space stripped, case kept.

    Anything that is not a string is returned as it is (it never equals a type name).
    """
    return value.strip() if isinstance(value, str) else value


def declared_type(annotation_gt: Any) -> str | None:
    """``annotation_gt.type`` (stripped) when it is one of the 12 known types."""
    if is_mapping(annotation_gt):
        value = annotation_gt.get("type")
        if isinstance(value, str):
            if value in RESOLVER_IDS:  # the common, already clean spelling
                return value
            value = value.strip()
            if value in RESOLVER_IDS:
                return value
    return None


def check_contract(annotation_gt: Any, reward_contract: Any) -> ContractCheck:
    """Contract check first: known type, matching resolver id, matching declared type.

    Type and id strings compare stripped of surrounding white space, case significant.
    """
    if annotation_gt is None:
        return ContractCheck(None, "the instance has no annotation ground truth")
    if not is_mapping(annotation_gt):
        return ContractCheck(None, f"annotation_gt is a {type(annotation_gt).__name__}, not a mapping")
    annotation_type = declared_type(annotation_gt)
    if annotation_type is None:
        raw = annotation_gt.get("type")
        known = ", ".join(ANNOTATION_TYPES)
        return ContractCheck(None, f"unknown annotation type {raw!r} (known: {known})")
    if "value" not in annotation_gt:
        return ContractCheck(annotation_type, "annotation_gt has no value")
    if not is_mapping(reward_contract):
        return ContractCheck(annotation_type, "reward_contract is not a mapping")
    annotation_contract = reward_contract.get("annotation")
    if not is_mapping(annotation_contract):
        return ContractCheck(annotation_type, "reward_contract has no annotation entry")
    reward_id = annotation_contract.get("id")
    expected_id = RESOLVER_IDS[annotation_type]
    if not isinstance(reward_id, str) or reward_id.strip() != expected_id:
        return ContractCheck(
            annotation_type,
            f"reward_contract.annotation.id {reward_id!r} is not {expected_id!r} for type {annotation_type!r}",
        )
    contract_type = annotation_contract.get("type")
    if (
        contract_type not in (None, "")
        and contract_type != annotation_type  # the common, clean spelling decides without stripping
        and type_name(contract_type) not in ("", annotation_type)
    ):
        return ContractCheck(
            annotation_type,
            f"reward_contract.annotation.type {contract_type!r} differs from annotation_gt.type {annotation_type!r}",
        )
    return new_record(ContractCheck, (annotation_type, ""))
