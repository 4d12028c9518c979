"""Query events: match appear/disappear as cepflow events (002 Listing 3, 000 §4.2)."""

import re
from pathlib import Path

import pytest

from cepflow.events.event import Event
from cepflow.models import Model, read_metamodel
from cepflow.queries import QueryEngine, QueryEventSource, QueryEventSpec, load_queries

DATA = Path(__file__).parent / "data"
KINECT = read_metamodel(DATA / "kinect.mm")
GESTURE = load_queries(DATA / "gesture.vql", KINECT)

LISTING_3 = [
    ("ForwardStartFound", "ForwardStart", "found", ["B", "_RH", "_RE", "_RS", "_H"]),
    ("ForwardStartLost", "ForwardStart", "lost", ["B"]),
    ("AboveFound", "rightHandAboveHead", "found", ["B"]),
    ("AboveLost", "rightHandAboveHead", "lost", ["B"]),
]


def kinect_model(bodies: int) -> Model:
    m = Model(KINECT)
    with m.transaction(ts=0):
        for i in range(bodies):
            b = m.create("Body", f"B{i}")
            for cls, ref, x, y in (("Head", "head", 0.0, 1.7), ("RightHand", "rightHand", 0, 1),
                                   ("RightElbow", "rightElbow", 0.4, 1.3),
                                   ("RightShoulder", "rightShoulder", 0.2, 1.4)):
                m.set(b, ref, m.create(cls, f"{cls}{i}", x=x, y=y))
    return m


def signature(events: list[Event]) -> list[tuple]:
    return [(e.type, e.params, e.ts, e.id) for e in events]


def test_posture_changes_become_events_in_a_deterministic_order():
    m = kinect_model(3)
    source = QueryEventSource(QueryEngine(m, GESTURE), LISTING_3)
    with m.transaction(ts=40):  # bodies 2 and 0 stretch their arms
        m.set("RightHand2", "x", 1.0)
        m.set("RightHand0", "x", 1.0)
    assert signature(source.drain()) == [
        ("ForwardStartFound", ("B0",), 40, "ForwardStartFound#1"),
        ("ForwardStartFound", ("B2",), 40, "ForwardStartFound#2"),
    ]
    assert source.drain() == []
    with m.transaction(ts=80):  # B0's hand way above the head: posture lost, noise found
        for y in (3.0, 6.0, 9.0):  # one observation per commit: the last value
            m.set("RightHand0", "y", y)
    assert signature(source.drain()) == [
        ("ForwardStartLost", ("B0",), 80, "ForwardStartLost#1"),
        ("AboveFound", ("B0",), 80, "AboveFound#1"),
    ]
    m.delete("B2")
    assert signature(source.drain()) == [
        ("ForwardStartLost", ("B2",), 80, "ForwardStartLost#2")]


def test_event_types_describe_the_parameters():
    m = kinect_model(1)
    source = QueryEventSource(QueryEngine(m, GESTURE), [
        QueryEventSpec("Posture", "ForwardStart", "found", ("B", None, None, None, "H"),
                       params=("H", "B")),
        ("All", "rightHandAboveHead", "lost"),
    ])
    posture = source.event_types["Posture"]
    assert posture.param_names == ("H", "B")
    assert [(p.type, p.declared_type) for p in posture.params] == [("str", "Head"),
                                                                   ("str", "Body")]
    assert source.event_types["All"].param_names == ("B", "RH", "H")
    m.set("RightHand0", "x", 1.0)
    (event,) = source.drain()
    assert (event.type, event.params) == ("Posture", ("Head0", "B0"))


def test_listeners_get_every_commits_events():
    m = kinect_model(1)
    source = QueryEventSource(QueryEngine(m, GESTURE), LISTING_3[:1])
    batches = []
    unsubscribe = source.subscribe(batches.append)
    m.set("RightHand0", "y", 1.1)
    m.set("RightHand0", "x", 1.0)
    assert [[e.type for e in b] for b in batches] == [[], ["ForwardStartFound"]]
    unsubscribe()
    source.close()
    m.set("RightHand0", "x", 0.0)
    assert len(batches) == 2 and len(source.drain()) == 1


def test_one_event_per_match_and_repeated_names_unify():
    m = kinect_model(2)
    source = QueryEventSource(QueryEngine(m, GESTURE), [
        ("Any", "rightHandAboveHead", "found", []),
        ("Same", "rightHandAboveHead", "found", ["X", "X"]),
    ])
    with m.transaction(ts=1):
        for i in range(2):
            for _ in range(3):
                m.set(f"RightHand{i}", "y", 5.0)
    assert [(e.type, e.params) for e in source.drain()] == [("Any", ()), ("Any", ())]


@pytest.mark.parametrize("spec, message", [
    (("E", "nope", "found"), "unknown query 'nope'"),
    (("E", "ForwardStart", "seen"), "change must be 'found' or 'lost'"),
    (("E", "ForwardStart"), "a query event is (event, query, change"),
    (("E", "ForwardStart", "found", ["a", "b", "c", "d", "e", "f"]), "has 5 parameter(s), 6"),
    (("E", "ForwardStart", "found", ["B"], ["X"]), "parameter(s) X not bound by ForwardStart"),
    (("E", "ForwardStart", "found", ["B", "RH"], ["B"]), "RH bound by the query but not a decl"),
    (("E", "ForwardStart", "found", ["B"], ["B", "B"]), "name one parameter twice"),
])
def test_invalid_declarations(spec, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        QueryEventSource(QueryEngine(kinect_model(0), GESTURE), [spec])


def test_vepl_change_names_are_accepted():
    source = QueryEventSource(QueryEngine(kinect_model(0), GESTURE), [
        ("F", "ForwardStart", "NEW_MATCH_FOUND", ["B"]),
        ("L", "ForwardStart", "EXISTING_MATCH_LOST", ["B"])])
    m = source.engine.model
    with m.transaction():
        body = m.create("Body", "B")
        for cls, x in (("RightHand", 1.0), ("RightElbow", 0.5), ("RightShoulder", 0.0),
                       ("Head", 0.0)):
            m.set(body, cls[0].lower() + cls[1:], m.create(cls, cls, x=x, y=1.0))
    m.delete(body)
    assert [e.type for e in source.drain()] == ["F", "L"]
