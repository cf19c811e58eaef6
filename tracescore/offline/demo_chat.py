"""The demo's multi-turn agent: a city guide whose users tell it who they are, then rely on it.

Each conversation is four turns, one trace each, sharing a ``gen_ai.conversation.id``: the user
gives a name, a city and a diet, then asks for a restaurant, a museum and their own name back.
A guide with a working memory uses those facts in every answer; once its memory degrades it asks
for them again, ignores the diet, or says it does not know the user. Turn by turn, such an answer
can still look fine ("Which city are you in?" is a relevant reply to a request for a
restaurant); only the conversation shows the user had said so, which is what conversation
scorers are for.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

CHAT_AGENT = "concierge"
CHAT_SERVICE = "concierge-app"
CHAT_INSTRUCTIONS = (
    "You are Concierge, a friendly city guide. Remember what the user tells you about themselves "
    "and use it in every answer."
)
TURNS_PER_CONVERSATION = 4
OPEN_CONVERSATIONS = 3
"""Conversations in progress at once, so turns of several conversations interleave as real
traffic does."""

_NAMES = ("Ada", "Bruno", "Chen", "Dalia", "Emeka", "Freya", "Goran", "Hana")
_CITIES = {
    "Lyon": ("Le Potager des Halles", "the Musee des Confluences"),
    "Porto": ("Da Terra", "the Serralves Museum"),
    "Kyoto": ("Shigetsu", "the Kyoto National Museum"),
    "Montreal": ("LOV", "the Montreal Museum of Fine Arts"),
    "Cape Town": ("Plant Cafe", "the Zeitz MOCAA"),
}
_DIETS = ("vegetarian", "vegan", "gluten-free")


@dataclass
class ChatConversation:
    """One conversation in progress: who the user is and the messages so far."""

    id: str
    name: str
    city: str
    diet: str
    messages: list[tuple[str, str]] = field(default_factory=list)
    """``(role, text)`` in order."""

    @property
    def turn(self) -> int:
        return sum(role == "user" for role, _ in self.messages)


class ChatScript:
    """The next turn of some conversation in progress, with an answer from a good or a failing
    memory; its own random generator, so the other agents' traffic does not change with it."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.open: list[ChatConversation] = []

    def next_turn(self, forgetful: bool) -> tuple[ChatConversation, str, str]:
        """``(conversation, user message, answer)``; the turn is appended to the conversation."""
        if len(self.open) < OPEN_CONVERSATIONS:
            self.open.append(
                ChatConversation(
                    id=f"chat-{self.rng.randrange(16**12):012x}",
                    name=self.rng.choice(_NAMES),
                    city=self.rng.choice(list(_CITIES)),
                    diet=self.rng.choice(_DIETS),
                )
            )
        conversation = self.rng.choice(self.open)
        user, answer = self._exchange(conversation, forgetful)
        conversation.messages += [("user", user), ("assistant", answer)]
        if conversation.turn == TURNS_PER_CONVERSATION:
            self.open.remove(conversation)
        return conversation, user, answer

    def _exchange(self, c: ChatConversation, forgetful: bool) -> tuple[str, str]:
        restaurant, museum = _CITIES[c.city]
        turn = c.turn + 1
        if turn == 1:
            return (
                f"Hi, I'm {c.name}. I live in {c.city} and I eat {c.diet}.",
                f"Nice to meet you, {c.name}! How can I help you in {c.city} today?",
            )
        if turn == 2:
            good = f"For {c.diet} food in {c.city}, {restaurant} is a lovely choice, {c.name}."
            forgot = self.rng.choice(
                (
                    "Sure! Which city are you in, and do you have any dietary preferences?",
                    "You should try the steakhouse on the main square, their ribs are famous.",
                )
            )
            return (
                "Can you recommend a restaurant for dinner tonight?",
                forgot if forgetful else good,
            )
        if turn == 3:
            good = f"In {c.city}, {museum} is well worth a visit."
            forgot = "Happy to help! Where are you staying at the moment?"
            return (
                "Thanks! And which museum is worth visiting nearby?",
                forgot if forgetful else good,
            )
        good = f"Of course, you're {c.name}, and you live in {c.city}. Enjoy your evening!"
        forgot = "I'm sorry, I don't know your name. Could you tell me?"
        return "Great. By the way, do you remember my name?", forgot if forgetful else good
