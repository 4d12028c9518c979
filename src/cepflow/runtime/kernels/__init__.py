"""The column kernels: a whole batch of events through patterns of a shape they recognise
(runtime.shapes), with the per-event engine's matches, ids, state, timers and statistics —
kernels.chain for keyed sequences under chronicle (and, by the plans of kernels.noise and
kernels.every, under immediate, strict and unrestricted), kernels.pair for Esper's
``every a = A -> b = B(key) [-> c = C(key) …]``, kernels.timer_end for Esper's patterns that
end at a timer (the missing event, the interval after ``b``); kernels.frame is what they do
around a batch."""

from cepflow.runtime.kernels.chain import process_batch, process_columns
from cepflow.runtime.kernels.frame import Declined
from cepflow.runtime.kernels.pair import process_esper_batch, process_esper_columns

__all__ = ["Declined", "process_batch", "process_columns", "process_esper_batch",
           "process_esper_columns"]
