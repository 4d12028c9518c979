"""Gesture recognition on the live pipeline (000 §7, 002): body model, posture queries, the
recorded arm rotation and the in-process run. Import with ``examples/`` on ``sys.path``
(``import gesture_live.pipeline``); ``cepflow demo gesture`` does this for you."""
