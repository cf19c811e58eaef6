"""A stream of realistic agent runs, good and bad, for the ``consistency`` scorer (issue 47).

Four agents (weather, shop support, billing, travel), 0–4 tool calls a run, answers written in
varied natural language: units and formats change (°C/°F, rounded or not, ``$1,234.50`` or
``1.234,50 €``, ``March 7`` or ``07/03/2026``), some users write in Spanish, French or German,
and among the good runs are small talk and honest "the service is unreachable" answers. Bad
runs are of six kinds: ``refusal``, ``off_topic``, ``truncated``, ``wrong_entity``,
``contradiction`` and ``fabricated``.

Every list of wordings and entities is split in two pools (even and odd positions): the
``tune`` stream draws from the first, the ``held`` stream from the second, so a scorer tuned on
one is measured on wordings and entities it never saw.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracescore.extract.model import AgentRun
from tracescore.offline.demo import Agent, DemoSender, ToolFailure, Turn
from tracescore.offline.inputs import read_runs

T = TypeVar("T")
BAD_KINDS = ("refusal", "off_topic", "truncated", "wrong_entity", "contradiction", "fabricated")
GOOD_KINDS = ("good", "small_talk", "unreachable")
SPLITS = ("tune", "held")


@dataclass(frozen=True)
class StreamRun:
    agent: Agent
    turn: Turn
    answer: str
    kind: str
    finish_reason: str = "stop"

    @property
    def bad(self) -> bool:
        return self.kind in BAD_KINDS


class Pool:
    """Draws from one half of every list: the split's own wordings and entities."""

    def __init__(self, split: str, rng: random.Random) -> None:
        self.half = SPLITS.index(split)
        self.rng = rng

    def pick(self, options: Sequence[T]) -> T:
        own = options[self.half :: 2] or options
        return self.rng.choice(own)

    def __call__(self, options: Sequence[str], **values: Any) -> str:
        return self.pick(options).format(**values)


# --- shared wordings --------------------------------------------------------------------------

REFUSALS = (
    "I'm sorry, but I can't help with that request.",
    "Unfortunately I'm not able to help with that.",
    "I cannot assist with this. Is there anything else I can do for you?",
    "I'm afraid I can't provide that information.",
    "Sorry, I am unable to answer that question.",
    "As an AI, I can't share that kind of information.",
    "I won't be able to look into that for you, sorry.",
    "That's not something I can help with right now, I'm sorry.",
    "I can't do that, but feel free to ask me something else!",
    "I must decline this request.",
    "I'm not able to provide details on that, apologies.",
    "Sorry, I can not give you that information.",
)
PLEASANTRIES = (
    "Thanks for reaching out! Have a wonderful day.",
    "Great question! Let me know if there's anything else on your mind.",
    "We appreciate your patience and value you as a customer.",
    "Happy to chat anytime. Take care and stay safe!",
    "It's always a pleasure to hear from you. Wishing you all the best.",
    "Life is full of surprises, and every day brings something new to discover.",
    "Our team works hard every day to make your experience delightful.",
    "Remember to stay hydrated and get plenty of rest this week.",
)
SMALL_TALK = (
    ("Hi there!", "Hello! How can I help you today?"),
    ("thanks, that's all", "You're welcome! Have a great day."),
    ("Good morning", "Good morning! What can I do for you?"),
    ("you're awesome", "Thank you, that's kind of you to say! Anything else I can help with?"),
    ("ok cool", "Glad that helped. Let me know if you need anything else."),
    ("Hey, are you a bot?", "I am an automated assistant, here to help with your questions."),
    ("Merci beaucoup !", "Avec plaisir ! Bonne journée."),
    ("¡Gracias por la ayuda!", "¡De nada! Aquí estoy si necesitas algo más."),
    ("bye", "Goodbye, and thanks for stopping by!"),
    ("Danke schön!", "Gern geschehen! Einen schönen Tag noch."),
)
UNREACHABLE = (
    "Sorry, I couldn't reach the {what} service just now. Please try again in a few minutes.",
    "The {what} system isn't responding at the moment, so I can't give you an answer yet.",
    "I tried to look that up, but the {what} service timed out. Could you try again shortly?",
    "It looks like our {what} lookup is temporarily unavailable. I'm sorry for the trouble.",
    "I wasn't able to retrieve the {what} details because of an error on our side.",
    "Unfortunately the {what} service is down right now; please check back later.",
)
UNREACHABLE_FOREIGN = (
    (
        ("¿",),
        (
            "Lo siento, el servicio no responde en este momento. Inténtalo de nuevo más tarde.",
            "No he podido consultar el servicio ahora mismo; vuelve a intentarlo en unos minutos.",
        ),
    ),
    (
        ("Quel ", "Est-ce", "Où "),
        (
            "Désolé, le service ne répond pas pour le moment. Réessayez dans quelques minutes.",
            "Je n'ai pas pu joindre le service à cause d'une erreur de notre côté, désolé.",
        ),
    ),
    (
        ("Wie ", "Brauche "),
        (
            "Leider ist der Dienst gerade nicht erreichbar. Bitte versuche es gleich noch einmal.",
            "Ich konnte den Dienst wegen eines Fehlers auf unserer Seite nicht abfragen, sorry.",
        ),
    ),
)
"""The honest failure in the user's language, by how a foreign question starts."""
FAILURES = (
    ToolFailure("timeout", "upstream request timed out after 10s"),
    ToolFailure("unavailable", "503 Service Unavailable"),
    ToolFailure("connection_error", "connection refused"),
    ToolFailure("rate_limited", "429 Too Many Requests"),
)


def _cut(text: str, rng: random.Random) -> str:
    """``text`` stopped mid-sentence, the way a length limit stops it."""
    words = text.split()
    keep = rng.randint(max(2, len(words) // 3), max(3, len(words) - 2))
    cut = " ".join(words[:keep])
    return cut.rstrip(".!?") if rng.random() < 0.8 else cut + " ("


# --- weather ----------------------------------------------------------------------------------

CITIES = (
    "Paris", "Tokyo", "Lisbon", "Toronto", "Nairobi", "Oslo", "Sydney", "Chicago",
    "Madrid", "Berlin", "Buenos Aires", "Cape Town", "Denver", "Seoul", "Dublin", "Mumbai",
)  # fmt: skip
CONDITIONS = (
    ("light rain", "rainy"), ("sunny", "sunny"), ("overcast", "cloudy"), ("clear skies", "clear"),
    ("snow showers", "snowy"), ("partly cloudy", "cloudy"), ("drizzle", "drizzly"),
    ("thunderstorms", "stormy"), ("fog", "foggy"), ("sunny intervals", "sunny"),
)  # fmt: skip
OTHER_CONDITION = {
    "light rain": "sunny", "sunny": "rain", "overcast": "sunny", "clear skies": "rainy",
    "snow showers": "sunny", "partly cloudy": "snowing", "drizzle": "clear skies",
    "thunderstorms": "sunny", "fog": "clear", "sunny intervals": "snow",
}  # fmt: skip
WEATHER_QUESTIONS = (
    "What's the weather in {city} right now?",
    "Is it raining in {city}?",
    "How warm is it in {city} at the moment?",
    "do i need an umbrella in {city} today",
    "Quick one: temperature in {city}, in Fahrenheit please.",
    "I'm heading out in {city}, what's it like outside?",
    "Current conditions for {city}?",
    "Could you check the weather over in {city} for me?",
    "weather {city}",
    "Should I bring a jacket in {city} this afternoon?",
    "Hey! What's the temperature looking like in {city}?",
    "Any idea how cold it is in {city}?",
)
WEATHER_FOREIGN = (
    ("es", "¿Qué tiempo hace ahora en {city}?"),
    ("fr", "Quel temps fait-il à {city} en ce moment ?"),
    ("de", "Wie ist das Wetter gerade in {city}?"),
    ("es", "¿Hace frío en {city} hoy? Quiero saber si llevo abrigo."),
    ("fr", "Est-ce qu'il pleut à {city} aujourd'hui ?"),
    ("de", "Brauche ich heute in {city} eine Jacke?"),
)
WEATHER_ANSWERS = (
    "Right now in {city} it's {temp} with {cond}, and the wind is at {wind} km/h.",
    "It's currently {temp} in {city} ({cond}). Humidity is around {hum}%.",
    "{city} is seeing {cond} at the moment, with a temperature of {temp}.",
    "Currently {temp} and {cond} in {city}. {advice}",
    "The latest reading for {city}: {temp}, {cond}, wind {wind} km/h. {advice}",
    "In {city} it's {cond} and {temp} right now. {advice}",
    "Looks like {cond} in {city} today, {temp} at the moment with {hum}% humidity.",
    "Weather in {city}: {temp}, {cond}. {advice}",
)
WEATHER_ANSWERS_FOREIGN = {
    "es": (
        "Ahora mismo en {city} hace {temp}. El viento sopla a {wind} km/h.",
        "En {city} la temperatura es de {temp}, con una humedad del {hum}%.",
    ),
    "fr": (
        "En ce moment à {city}, il fait {temp}. Le vent souffle à {wind} km/h.",
        "À {city}, la température est de {temp}, avec une humidité de {hum} %.",
    ),
    "de": (
        "In {city} sind es gerade {temp}. Der Wind weht mit {wind} km/h.",
        "Aktuell hat es in {city} {temp}. Die Luftfeuchtigkeit liegt bei {hum} %.",
    ),
}
FABRICATED_WEATHER = (
    " The UV index is {n} and pollen levels are high.",
    " Sunset is at {h}:{m:02d} pm tonight.",
    " Yesterday's high was {n}°C.",
    " Air quality index: {big}.",
    " There's a {n}% chance of rain after {h} pm.",
    " Tomorrow should reach {n} degrees.",
)


def _temp(rng: random.Random, pool: Pool, celsius: float, fahrenheit: bool) -> str:
    if fahrenheit:
        return pool(
            ("{f}°F", "{f} °F", "about {f}°F", "{f} degrees Fahrenheit"),
            f=round(celsius * 9 / 5 + 32),
        )
    return pool(
        ("{c}°C", "{r}°C", "{r} °C", "around {r} degrees", "{r} degrees Celsius", "{c} °C"),
        c=celsius,
        r=round(celsius),
    )


def _weather(pool: Pool, kind: str) -> tuple[Agent, Turn, str]:
    rng = pool.rng
    city = pool.pick(CITIES)
    language = "en"
    if rng.random() < 0.15 and kind not in ("off_topic",):
        language, question = pool.pick(WEATHER_FOREIGN)
        question = question.format(city=city)
    else:
        question = pool(WEATHER_QUESTIONS, city=city)
    fahrenheit = "Fahrenheit" in question
    celsius = round(rng.uniform(-8, 35), 1)
    condition, _ = pool.pick(CONDITIONS)
    wind, humidity = rng.randint(2, 45), rng.randint(25, 98)
    asked_city = city
    if kind == "wrong_entity":
        city = pool.pick([c for c in CITIES if c != city])
    result = {
        "city": city,
        "temperature_c": celsius,
        "conditions": condition,
        "humidity": humidity,
        "wind_kmh": wind,
    }
    tools: list[tuple[str, dict[str, Any], Any]] = [("get_weather", {"city": city}, result)]
    if rng.random() < 0.3:
        tomorrow = {
            "high_c": round(celsius + rng.uniform(-3, 4)),
            "low_c": round(celsius - rng.uniform(2, 8)),
            "conditions": pool.pick(CONDITIONS)[0],
        }
        tools.append(
            ("get_forecast", {"city": city, "days": 1}, {"city": city, "tomorrow": tomorrow})
        )
    if kind == "wrong_entity" and rng.random() < 0.5:  # called right, answered about another city
        tools[0] = ("get_weather", {"city": asked_city}, {**result, "city": asked_city})
    advice = pool(
        (
            "Bring a jacket.",
            "A light layer should do.",
            "No umbrella needed.",
            "Take an umbrella just in case.",
            "Dress warmly.",
            "Enjoy the day!",
        ),
    )
    temp = _temp(rng, pool, celsius, fahrenheit)
    if kind == "contradiction":
        if rng.random() < 0.5:
            temp = _temp(
                rng, pool, round(celsius + rng.choice((-1, 1)) * rng.uniform(3, 9), 1), fahrenheit
            )
        else:
            condition = OTHER_CONDITION[condition]
    values = {
        "city": city,
        "temp": temp,
        "cond": condition,
        "wind": wind,
        "hum": humidity,
        "advice": advice,
    }
    if language != "en" and kind != "contradiction":
        answer = pool(WEATHER_ANSWERS_FOREIGN[language], **values)
    else:
        answer = pool(WEATHER_ANSWERS, **values)
    if kind == "fabricated":
        answer += pool(
            FABRICATED_WEATHER,
            n=rng.randint(13, 40),
            h=rng.randint(5, 9),
            m=rng.randint(0, 59),
            big=rng.randint(120, 480),
        )
    return _made(
        pool,
        WEATHER_AGENTS,
        Turn(question, tools, f"Call get_weather for {asked_city}.", answer, answer, answer),
        "weather",
    )


WEATHER_AGENTS = (
    Agent("weather-bot", "weather-app", "claude-3-5-haiku-20241022", "anthropic",
          "You are WeatherBot. Always call get_weather before answering. Give temperatures in the user's preferred unit.", lambda r: _never()),
    Agent("skycast", "skycast-api", "gpt-4o-mini", "openai",
          "You are Skycast, a friendly forecaster. Use the get_weather tool and keep answers to two sentences.", lambda r: _never()),
)  # fmt: skip


def _made(pool: Pool, agents: Sequence[Agent], turn: Turn, topic: str) -> tuple[Agent, Turn, str]:
    """A scenario's run: one of its ``agents`` answering ``turn``, with the scenario's topic."""
    return pool.pick(agents), turn, topic


def _never() -> Turn:
    raise NotImplementedError("stream agents are driven by the stream, not by the demo")


# --- shop support: orders and products --------------------------------------------------------

ORDER_FORMATS = ("NW-{n}", "#{n}", "{n}", "ORD-{n}", "A{n}", "order {n}")
STATUSES = (
    ("shipped", ("has shipped", "is on its way", "was dispatched", "is in transit")),
    ("delivered", ("was delivered", "has been delivered", "arrived")),
    ("processing", ("is still being prepared", "is being processed", "hasn't shipped yet")),
    ("cancelled", ("was cancelled", "has been canceled")),
)
WRONG_STATUS = {
    "shipped": "was delivered",
    "delivered": "is still being processed",
    "processing": "has shipped",
    "cancelled": "was delivered",
}
ORDER_QUESTIONS = (
    "Where is my order {oid}?",
    "hi, any update on {oid}? it's been a week",
    "Can you tell me the status of order {oid} please",
    "I still haven't received {oid}. What's going on?",
    "When will {oid} arrive?",
    "Has my order {oid} shipped yet?",
    "Could you check on order number {oid} for me?",
    "What's happening with {oid}?",
    "¿Dónde está mi pedido {oid}?",
    "Où en est ma commande {oid} ?",
)
ORDER_ANSWERS = (
    "Your order {oid} {status} with {carrier}. It should arrive on {eta}.",
    "Good news: {oid} {status} ({carrier}), estimated delivery {eta}.",
    "Order {oid} {status}. The total was {total}, and {carrier} expects to deliver it by {eta}.",
    "I checked {oid}: it {status}. Expected delivery date: {eta}.",
    "Thanks for waiting! {oid} {status}; {carrier} shows delivery on {eta}.",
    "Here's the latest on {oid}: it {status} via {carrier}, arriving {eta}. Order total: {total}.",
)
ORDER_ANSWERS_FOREIGN = {
    "es": "Tu pedido {oid} ya fue enviado con {carrier}. Llegará el {eta}.",
    "fr": "Votre commande {oid} a été expédiée avec {carrier}. Livraison prévue le {eta}.",
}
CARRIERS = ("UPS", "DHL", "FedEx", "USPS", "La Poste", "GLS")
PRODUCTS = (
    "Trailblazer 40L Backpack", "Summit Down Jacket", "Alpine Trekking Poles", "Ridge Merino Hoodie",
    "Canyon Water Filter", "Basecamp 2P Tent", "Glacier Sleeping Bag", "Coastline Rain Shell",
)  # fmt: skip
PRODUCT_QUESTIONS = (
    "Is the {product} in stock?",
    "how much is the {product}?",
    "Do you have the {product} available, and what does it cost?",
    "I'd like to buy the {product} - is it available right now?",
    "Price check on the {product} please",
    "Can I still order the {product}?",
)
PRODUCT_ANSWERS = (
    "The {product} is {stock_words} and costs {price}.",
    "Yes, the {product} is {stock_words}. It's {price}.",
    "The {product} sells for {price} and is currently {stock_words}.",
    "{price} for the {product}; right now it's {stock_words}.",
)
FABRICATED_SHOP = (
    " Your tracking number is 1Z{big}.",
    " You'll also get a {n}% discount on your next order.",
    " We've added {n} loyalty points to your account.",
    " A refund of ${n}.99 has been issued.",
    " Reference number: RX-{big}.",
)


def _money(pool: Pool, amount: float, currency: str) -> str:
    symbol = {"USD": "$", "EUR": "€", "GBP": "£"}[currency]
    if currency == "EUR":
        return pool(
            ("€{a:,.2f}", "{d} €", "{a:.2f} EUR", "EUR {a:,.2f}"),
            a=amount,
            d=f"{amount:,.2f}".replace(",", " ").replace(".", ",").replace(" ", "."),
        )
    return pool(
        ("{s}{a:,.2f}", "{s}{a:,.2f} {c}", "{a:.2f} {c}", "{s}{a:,.2f}"),
        s=symbol,
        a=amount,
        c=currency,
    )


def _date(pool: Pool, year: int, month: int, day: int) -> str:
    names = "January February March April May June July August September October November December".split()
    return pool(
        (
            "{mn} {d}",
            "{d} {mn} {y}",
            "{y}-{m:02d}-{d:02d}",
            "{mn} {d}, {y}",
            "{mn} {d}th",
            "{d}/{m}/{y}",
            "{ab} {d}",
            "{wd}{mn} {d}",
        ),
        mn=names[month - 1],
        ab=names[month - 1][:3],
        d=day,
        m=month,
        y=year,
        wd=pool.pick(("", "")),
    )


def _shop(pool: Pool, kind: str) -> tuple[Agent, Turn, str]:
    rng = pool.rng
    agent = pool.pick(SHOP_AGENTS)
    if rng.random() < 0.6:
        number = rng.randint(10000, 99999)
        oid = pool(ORDER_FORMATS, n=number)
        bare = oid.replace("order ", "")
        question = pool(ORDER_QUESTIONS, oid=oid)
        status, phrases = pool.pick(STATUSES)
        month, day = rng.randint(1, 12), rng.randint(1, 28)
        total = round(rng.uniform(15, 900), 2)
        called = bare.lstrip("#")
        if kind == "wrong_entity":
            called = called.replace(str(number), str(number + rng.choice((1, -1, 10, 100, -9))))
        result = {
            "order_id": called,
            "status": status,
            "carrier": pool.pick(CARRIERS),
            "eta": f"2026-{month:02d}-{day:02d}",
            "total": total,
            "currency": "USD",
            "items": rng.randint(1, 4),
        }
        tools: list[tuple[str, dict[str, Any], Any]] = [("get_order", {"order_id": called}, result)]
        if rng.random() < 0.25:
            tools.append(
                (
                    "get_shipment",
                    {"carrier": result["carrier"], "order_id": called},
                    {
                        "last_scan": f"2026-{month:02d}-{max(1, day - 2):02d}T09:14:00Z",
                        "location": pool.pick(CITIES),
                    },
                )
            )
        shown = f"#{called}" if oid.startswith("#") else called if kind == "wrong_entity" else bare
        phrase = pool.pick(phrases)
        if kind == "contradiction":
            if rng.random() < 0.6:
                phrase = WRONG_STATUS[status]
            else:
                total = round(total * rng.uniform(1.2, 1.8), 2)
                result = {**result}
        if question.startswith(("¿", "Où")):
            language = "es" if question.startswith("¿") else "fr"
            answer = ORDER_ANSWERS_FOREIGN[language].format(
                oid=shown, carrier=result["carrier"], eta=_date(pool, 2026, month, day)
            )
            if status != "shipped" and kind != "contradiction":
                tools[0] = ("get_order", {"order_id": called}, {**result, "status": "shipped"})
        else:
            answer = pool(
                ORDER_ANSWERS,
                oid=shown,
                status=phrase,
                carrier=result["carrier"],
                eta=_date(pool, 2026, month, day),
                total=_money(pool, total, "USD"),
            )
        if (
            kind == "contradiction"
            and "{total}" not in answer
            and phrase not in WRONG_STATUS.values()
        ):
            answer = answer.rstrip(".") + f". You were charged {_money(pool, total, 'USD')}."
        reasoning = f"Look up order {called}."
    else:
        product = pool.pick(PRODUCTS)
        question = pool(PRODUCT_QUESTIONS, product=product)
        price = round(rng.uniform(19, 480), 2)
        in_stock = rng.random() < 0.7
        called = product
        if kind == "wrong_entity":
            called = pool.pick([p for p in PRODUCTS if p != product])
        result = {
            "name": called,
            "price": price,
            "currency": "USD",
            "in_stock": in_stock,
            "stock": rng.randint(1, 40) if in_stock else 0,
        }
        tools = [("get_product", {"name": called}, result)]
        stock_words = (
            pool(("in stock", "available"))
            if in_stock
            else pool(("out of stock", "sold out", "currently unavailable"))
        )
        if kind == "contradiction":
            if rng.random() < 0.5:
                stock_words = "out of stock" if in_stock else "in stock"
            else:
                price = round(price * rng.uniform(0.5, 0.8), 2)
        answer = pool(
            PRODUCT_ANSWERS,
            product=called if kind == "wrong_entity" else product,
            stock_words=stock_words,
            price=_money(pool, price, "USD"),
        )
        reasoning = f"Look up {product}."
    if kind == "fabricated":
        answer += pool(FABRICATED_SHOP, big=rng.randint(10**7, 10**8), n=rng.randint(13, 60))
    return agent, Turn(question, tools, reasoning, answer, answer, answer), "order"


SHOP_AGENTS = (
    Agent("support-bot", "helpdesk-api", "gpt-4o-mini", "openai",
          "You are the support assistant of Northwind Outfitters. Look orders up with get_order and products with get_product before answering. Never promise refunds or discounts; escalate billing disputes to a human.", lambda r: _never()),
    Agent("orderdesk", "orders-svc", "gpt-4o", "openai",
          "You are OrderDesk for Northwind Outfitters. Be brief, friendly and factual. Only state what the tools return.", lambda r: _never()),
)  # fmt: skip


# --- billing ----------------------------------------------------------------------------------

INVOICE_QUESTIONS = (
    "How much do I owe on invoice {inv}?",
    "When is invoice {inv} due?",
    "What's the balance on {inv} and the due date?",
    "Can you pull up invoice {inv}? I need the amount.",
    "Is {inv} paid already?",
    "Invoice {inv}: amount and deadline please.",
)
INVOICE_ANSWERS = (
    "Invoice {inv} is {status} and the amount due is {amount}, due on {due}.",
    "You owe {amount} on {inv}. Payment is due {due}.",
    "{inv}: {amount}, {status}, due {due}.",
    "The balance of invoice {inv} is {amount}; please pay by {due}.",
    "According to our records, {inv} ({status}) comes to {amount} with a due date of {due}.",
)


def _billing(pool: Pool, kind: str) -> tuple[Agent, Turn, str]:
    rng = pool.rng
    year, month, day = 2026, rng.randint(1, 12), rng.randint(1, 28)
    inv = pool(
        ("INV-{y}-{n:04d}", "INV{n:05d}", "B-{n}", "invoice-{n}"), y=year, n=rng.randint(100, 9999)
    )
    question = pool(INVOICE_QUESTIONS, inv=inv)
    amount = round(rng.uniform(40, 12000), 2)
    currency = pool.pick(("EUR", "USD", "EUR", "GBP"))
    paid = rng.random() < 0.3
    called = inv
    if kind == "wrong_entity":
        called = inv[:-1] + str((int(inv[-1]) + rng.randint(1, 8)) % 10)
    result = {
        "invoice_id": called,
        "amount_due": 0.0 if paid else amount,
        "total": amount,
        "currency": currency,
        "due_date": f"{year}-{month:02d}-{day:02d}",
        "status": "paid" if paid else "unpaid",
    }
    tools: list[tuple[str, dict[str, Any], Any]] = [("get_invoice", {"invoice_id": called}, result)]
    if rng.random() < 0.3:
        tools.insert(
            0,
            (
                "get_customer",
                {
                    "email": pool(
                        (
                            "ana@example.com",
                            "li.wei@example.org",
                            "j.smith@example.net",
                            "k.osei@example.com",
                        )
                    )
                },
                {
                    "customer_id": f"C-{rng.randint(1000, 9999)}",
                    "plan": pool(("Pro", "Team", "Starter", "Enterprise")),
                },
            ),
        )
    status = "paid" if paid else pool(("unpaid", "open", "outstanding"))
    shown_amount = amount
    if kind == "contradiction":
        shown_amount = round(amount * rng.choice((0.5, 1.5, 0.9, 2.0)) + rng.randint(5, 90), 2)
    answer = pool(
        INVOICE_ANSWERS,
        inv=called if kind == "wrong_entity" else inv,
        status=status,
        amount=_money(pool, shown_amount, currency),
        due=_date(pool, year, month, day),
    )
    if kind == "fabricated":
        answer += pool(
            (
                " A late fee of {n} {c} applies after that.",
                " You qualify for a {n}% early-payment discount.",
                " Your account number is AC-{big}.",
                " The invoice was issued on {mn} {d}.",
            ),
            n=rng.randint(13, 95),
            c=currency,
            big=rng.randint(10**5, 10**6),
            mn=pool(("May", "October", "June", "February")),
            d=rng.randint(1, 28) if day > 14 else rng.randint(15, 28),
        )
    return _made(
        pool,
        BILLING_AGENTS,
        Turn(question, tools, f"Fetch invoice {called}.", answer, answer, answer),
        "billing",
    )


BILLING_AGENTS = (
    Agent("billing-assistant", "billing-svc", "gpt-4o-mini", "openai",
          "You are the billing assistant of Acme Cloud. Use get_invoice for invoice questions. Amounts are in the invoice's currency.", lambda r: _never()),
    Agent("ledger", "finance-api", "claude-3-5-sonnet-20241022", "anthropic",
          "You are Ledger, a billing helper. Quote amounts and dates exactly as the tools give them.", lambda r: _never()),
)  # fmt: skip


# --- travel: flights, then the destination's weather and a currency conversion ----------------

FLIGHT_QUESTIONS = (
    "Find me a flight from {a} to {b} on {when}.",
    "what flights are there {a} -> {b} {when}?",
    "I need to get from {a} to {b} on {when}, cheapest option?",
    "Any morning flights from {a} to {b} on {when}?",
    "Book-able flights {a} to {b}, {when}, please. Also how's the weather there?",
    "Flying {a} to {b} on {when}: what are my options and what will it cost in dollars?",
)
FLIGHT_ANSWERS = (
    "The best option is {flight}, leaving {a} at {dep} and landing in {b} at {arr}, for {price}.",
    "{flight} departs {dep} and arrives {arr}; the fare is {price}.",
    "I found {flight} on {date}: {dep} → {arr}, {price}.",
    "Cheapest is {flight} at {price}, departing {dep} from {a}, arriving {arr}.",
)


def _clock(pool: Pool, hour: int, minute: int) -> str:
    twelve = hour % 12 or 12
    return pool(
        ("{h:02d}:{m:02d}", "{t}:{m:02d} {ap}", "{h}:{m:02d}", "{t}:{m:02d}{ap}"),
        h=hour,
        m=minute,
        t=twelve,
        ap="am" if hour < 12 else "pm",
    )


def _travel(pool: Pool, kind: str) -> tuple[Agent, Turn, str]:
    rng = pool.rng
    a, b = rng.sample(pool.pick((CITIES[:8], CITIES[8:])), 2)
    month, day = rng.randint(1, 12), rng.randint(1, 28)
    when = _date(pool, 2026, month, day)
    question = pool(FLIGHT_QUESTIONS, a=a, b=b, when=when)
    dest = b
    if kind == "wrong_entity":
        dest = pool.pick([c for c in CITIES if c not in (a, b)])
    flights = []
    for _ in range(rng.randint(1, 3)):
        hour, minute = rng.randint(6, 20), rng.choice((0, 5, 15, 25, 35, 40, 50, 55))
        flights.append(
            {
                "flight": f"{pool.pick(('TP', 'LH', 'AF', 'BA', 'IB', 'KL'))} {rng.randint(100, 1999)}",
                "departs": f"2026-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}",
                "arrives": f"2026-{month:02d}-{day:02d}T{min(23, hour + rng.randint(1, 3)):02d}:{rng.choice((5, 10, 20, 45)):02d}",
                "price_eur": rng.randint(49, 640),
            }
        )
    tools: list[tuple[str, dict[str, Any], Any]] = [
        (
            "search_flights",
            {"origin": a, "destination": dest, "date": f"2026-{month:02d}-{day:02d}"},
            flights,
        )
    ]
    best = flights[0]
    extra = ""
    if "weather" in question or rng.random() < 0.3:
        celsius = round(rng.uniform(0, 32), 1)
        cond = pool.pick(CONDITIONS)[0]
        tools.append(
            (
                "get_weather",
                {"city": dest},
                {"city": dest, "temperature_c": celsius, "conditions": cond},
            )
        )
        extra += f" In {dest} expect {cond}, about {round(celsius)}°C."
    if "dollars" in question or rng.random() < 0.2:
        usd = round(best["price_eur"] * 1.08, 2)
        tools.append(
            (
                "convert_currency",
                {"amount": best["price_eur"], "from": "EUR", "to": "USD"},
                {"amount": usd, "currency": "USD", "rate": 1.08},
            )
        )
        extra += f" That's about ${usd:,.2f}."
    if rng.random() < 0.2:
        tools.append(
            (
                "get_baggage_policy",
                {"airline": best["flight"][:2]},
                {"carry_on_kg": 8, "checked_kg": 23},
            )
        )
        extra += " Carry-on is limited to 8 kg, checked bags to 23 kg."
    dep_h, dep_m = int(best["departs"][11:13]), int(best["departs"][14:16])
    arr_h, arr_m = int(best["arrives"][11:13]), int(best["arrives"][14:16])
    price = best["price_eur"]
    if kind == "contradiction":
        if rng.random() < 0.5:
            price += rng.choice((-1, 1)) * rng.randint(20, 90)
        else:
            dep_h = (dep_h + rng.randint(1, 4)) % 24
    answer = (
        pool(
            FLIGHT_ANSWERS,
            flight=best["flight"],
            a=a,
            b=dest if kind == "wrong_entity" else b,
            dep=_clock(pool, dep_h, dep_m),
            arr=_clock(pool, arr_h, arr_m),
            price=_money(pool, float(price), "EUR"),
            date=when,
        )
        + extra
    )
    if kind == "fabricated":
        answer += pool(
            (
                " Seat {n}C is still free.",
                " The flight has a {n}% on-time record.",
                " Gate B{n} opens {n2} minutes before departure.",
                " Your booking code is QX{big}.",
            ),
            n=rng.randint(13, 44),
            n2=rng.randint(25, 50),
            big=rng.randint(1000, 9999),
        )
    return _made(
        pool,
        TRAVEL_AGENTS,
        Turn(question, tools, f"Search flights {a} to {b}.", answer, answer, answer),
        "flight",
    )


TRAVEL_AGENTS = (
    Agent("travel-desk", "travel-api", "gpt-4o", "openai",
          "You are TravelDesk. Search flights before answering, quote fares in euros unless asked otherwise, and never invent seat numbers or booking codes.", lambda r: _never()),
)  # fmt: skip


# --- the stream -------------------------------------------------------------------------------

SCENARIOS: tuple[Callable[[Pool, str], tuple[Agent, Turn, str]], ...] = (
    _weather,
    _shop,
    _billing,
    _travel,
)
OFF_TOPIC = {
    "weather": "To reset your password, open Settings > Security and click Reset password.",
    "order": "The weather in Oslo is mild today with light winds from the west.",
    "billing": "Our hiking backpacks come in three sizes and two colours this season.",
    "flight": "Invoices can be exported from Billing > History as a CSV file.",
}


def stream_run(pool: Pool, kind: str) -> StreamRun:
    """One run of ``kind``, its wording and entities from ``pool``."""
    rng = pool.rng
    if kind == "small_talk":
        agent = pool.pick((*WEATHER_AGENTS, *SHOP_AGENTS, *BILLING_AGENTS, *TRAVEL_AGENTS))
        question, answer = pool.pick(SMALL_TALK)
        return StreamRun(
            agent,
            Turn(question, [], "Small talk: answer in kind.", answer, answer, answer),
            answer,
            kind,
        )
    shaped = "good" if kind in ("refusal", "off_topic", "truncated", "unreachable") else kind
    agent, turn, topic = pool.pick(SCENARIOS)(pool, shaped)
    answer, tools, finish = turn.good, turn.tools, "stop"
    if kind == "unreachable":
        failed = [(name, args, pool.pick(FAILURES)) for name, args, _ in tools[:1]]
        tools = failed  # the agent stops at the first failure
        foreign = [
            texts for starts, texts in UNREACHABLE_FOREIGN if turn.question.startswith(starts)
        ]
        answer = (
            pool.pick(foreign[0])
            if foreign
            else pool(
                UNREACHABLE,
                what=pool.pick(
                    {
                        "weather": ("weather", "forecast"),
                        "order": ("order tracking", "orders"),
                        "billing": ("billing", "invoice"),
                        "flight": ("flight search", "booking"),
                    }[topic]
                ),
            )
        )
    elif kind == "refusal":
        answer = pool.pick(REFUSALS)
        if rng.random() < 0.3:
            tools = []
    elif kind == "off_topic":
        answer = pool.pick((*PLEASANTRIES, OFF_TOPIC[topic]))
    elif kind == "truncated":
        answer = _cut(answer, rng)
        finish = "length" if rng.random() < 0.4 else "stop"
    turn = Turn(turn.question, tools, turn.reasoning, answer, answer, answer)
    return StreamRun(agent, turn, answer, kind, finish)


MIX = {
    "good": 0.70, "small_talk": 0.06, "unreachable": 0.05,
    "refusal": 0.03, "off_topic": 0.03, "truncated": 0.025, "wrong_entity": 0.03,
    "contradiction": 0.035, "fabricated": 0.03,
}  # fmt: skip
"""Kinds of run and their shares: 81 % good (small talk and honest failures among them)."""


def stream(split: str, count: int, seed: int = 47) -> list[StreamRun]:
    """``count`` runs of the ``split`` (``tune`` or ``held``) stream."""
    rng = random.Random(f"{seed}-{split}")
    pool = Pool(split, rng)
    kinds, weights = list(MIX), list(MIX.values())
    return [stream_run(pool, rng.choices(kinds, weights)[0]) for _ in range(count)]


def rebuilt(runs: Sequence[StreamRun], workdir: Path) -> list[AgentRun]:
    """``runs`` as the pipeline reads them: sent by the demo's sender as GenAI spans, exported
    to an OTLP file in ``workdir`` and rebuilt by extraction; in the order of ``runs``."""
    memory = InMemorySpanExporter()
    sender = DemoSender("unused", seed=47, drop_after=float("inf"), exporter=memory)
    try:
        ids = [sender.send_turn(r.agent, r.turn, r.answer, r.finish_reason) for r in runs]
    finally:
        sender.shutdown()
    export = workdir / "consistency-stream.pb"
    export.write_bytes(encode_spans(memory.get_finished_spans()).SerializeToString())
    by_trace = {run.trace_id: run for run in read_runs([export]) if run.primary}
    return [by_trace[trace_id] for trace_id in ids]
