"""The action of the gesture example's rule (002 Listing 5): advance the presentation."""

from cepflow.runtime.actions import action

slides: dict[str, int] = {}


@action("gesture.next_slide")
def next_slide(activation) -> None:
    """Count one slide forward for the body that made the gesture."""
    body = activation.bindings["B"]
    slides[body] = slides.get(body, 0) + 1
