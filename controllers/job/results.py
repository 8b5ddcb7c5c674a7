"""What a Volcano Job's own activities report back to its core: the claim names the volumes
step chose and the `controlledResources` markers the plugins step set. Handed in as inputs,
like `controllers.outcomes`, so the core decides what follows and the names survive a replay
(the activity drew them at random once; the history holds its answer)."""

from __future__ import annotations

from typing import Literal

from controllers.outcomes import Outcome


class VolumesEnsured(Outcome):
    kind: Literal["VolumesEnsured"] = "VolumesEnsured"
    claims: list[str]  # the claim of each spec.volumes[i], in order


class PluginsApplied(Outcome):
    kind: Literal["PluginsApplied"] = "PluginsApplied"
    controlled: dict[str, str]  # plugin-<name> -> <name>, for each plugin applied


AnyResult = VolumesEnsured | PluginsApplied
