"""Cooldown protection (Volcano's cdp plugin): a pod that started running less than its
cooldown time ago is nobody's victim.

Elastic jobs grow when there is room and shrink when reclaim or preempt take it back; without a
cooldown a pod can be evicted moments after it started, again and again (Volcano issue 2075).
A pod asks for protection with `volcano.sh/cooldown-time` (a Go duration, label first, then
annotation; the job controller copies both from the Job), read into `TaskInfo.cooldown`; its
cooldown runs from its PodScheduled condition's time while it is Running
(`TaskInfo.running_since`), as cdp.go reads it. A pod with no or an unparsable cooldown, or not
Running, is not protected. cdp registers the same filter as its preemptable and reclaimable
function; `framework.victim_tiers` asks it tier by tier (Volcano's rule), and
`actions.victims` drops protected pods from the candidates (Caldera's rule), so a gang with a
protected pod is not evicted whole.

The session's clock is `Snapshot.now`, when the shell read the cluster (Volcano reads
`time.Now()` per call). Without a clock (`now` None: pure tests that set none) no cooldown can
be shown to be running, so cdp protects nobody: it then changes nothing, rather than guessing.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from scheduling.api.snapshot import TaskInfo


def cooling(task: TaskInfo, now: datetime | None) -> bool:
    """The pod is within its cooldown: started + cooldown is still after `now` (None: no
    clock, nobody is)."""
    if now is None or task.cooldown is None or task.running_since is None:
        return False
    return task.running_since + task.cooldown > now


def victims(found: Sequence[TaskInfo], now: datetime | None) -> list[TaskInfo]:
    """cdp's filterVictimFn: the candidates not within their cooldown, in their order."""
    return [task for task in found if not cooling(task, now)]
