"""Live sessions: model commits → incremental queries → query events → CEP → rules (000 Fig. 17).

    from cepflow.live import LiveSession
    session = LiveSession(model, queries, program, actions={...})
    with session.transaction(ts=40):
        session.model.set("h1", "availableCpu", 10)
"""

from cepflow.live.live_session import LiveSession, LiveSessionError, LiveStats, query_event_specs

__all__ = ["LiveSession", "LiveSessionError", "LiveStats", "query_event_specs"]
