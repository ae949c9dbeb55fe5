"""Activities for the assistant's examples: ``--activities obelisk.examples.assistant:ACTIVITIES``.

The weather of a few cities (``weather.json``: a grey sky takes the ``notSunny``
branch), comments (``moderation.json``), languages (``translation.json``), pages
(``agent/stream.json``) and poems (``agent/producer.json``), all from small tables.
"""

from __future__ import annotations

from typing import Any

from obelisk import ActivityError, Branch, Context

Call = dict[str, Any]

#: The weather ``getWeather`` knows, by city.
WEATHER = {
    "London": {"sky": "rain", "temperature": 11},
    "Lisbon": {"sky": "sun", "temperature": 24},
}
#: Words that make a comment spam.
SPAM = ("spam", "buy now")


def get_weather(call: Call, tool: Any, context: Context) -> Any:
    """The weather of a city: its first alternative when sunny, else ``notSunny``."""
    weather = WEATHER.get(call["city"])
    if weather is None:
        raise ActivityError("UnknownCity", f"no weather for {call['city']!r}")
    return weather if weather["sky"] == "sun" else Branch("†state.notSunny", weather)


def find_park(call: Call, tool: Any, context: Context) -> Any:
    """Somewhere outside, for a sunny day."""
    return "a walk in Hyde Park"


def find_movie(call: Call, tool: Any, context: Context) -> Any:
    """Somewhere inside, for a grey day."""
    return "a matinee at the BFI"


def present_suggestion(call: Call, tool: Any, context: Context) -> Any:
    """The suggestion, as said to the user."""
    return {"suggestion": call["suggestion"]}


def analyze_sentiment(call: Call, tool: Any, context: Context) -> Any:
    """A comment's sentiment, from -1 to 1, by a few words."""
    text = call["comment"].lower()
    return 0.9 if "great" in text else -0.2 if "disagree" in text else 0.0


def check_keywords(call: Call, tool: Any, context: Context) -> Any:
    """The spam words a comment holds."""
    text = call["comment"].lower()
    return [word for word in SPAM if word in text]


def moderate_comment(call: Call, tool: Any, context: Context) -> Any:
    """Reject spam and hostile comments, approve the others."""
    return "reject" if call["keywords"] or call["sentiment"] < -0.5 else "approve"


def detect_language(call: Call, tool: Any, context: Context) -> Any:
    """An ISO 639-1 code, by a few words."""
    text = call["text"].lower()
    return "fr" if any(w in text for w in ("bonjour", "le ", "la ")) else "en"


def is_english(call: Call, tool: Any, context: Context) -> Any:
    """Whether a language code is English."""
    return call["language"] == "en"


def translate_text(call: Call, tool: Any, context: Context) -> Any:
    """English text as it is; ``Bonjour le monde`` as ``Hello world``."""
    if call.get("isEnglish"):
        return call["text"]
    return {"bonjour le monde": "Hello world"}.get(call["text"].lower(), call["text"])


def fetch_page(call: Call, tool: Any, context: Context) -> Any:
    """A page of a document and its word count."""
    return {"page": call["page"], "words": 100 + 10 * call["page"]}


def count_words(call: Call, tool: Any, context: Context) -> Any:
    """The words of all the pages."""
    return sum(page["words"] for page in call["pages"] if isinstance(page, dict))


def publish(call: Call, tool: Any, context: Context) -> Any:
    """Publish a poem; its address."""
    return {"url": "https://poems.example/sea"}


ACTIVITIES = {
    "getWeather": get_weather,
    "findPark": find_park,
    "findMovie": find_movie,
    "presentSuggestion": present_suggestion,
    "analyzeSentiment": analyze_sentiment,
    "checkKeywords": check_keywords,
    "moderateComment": moderate_comment,
    "detectLanguage": detect_language,
    "isEnglish": is_english,
    "translateText": translate_text,
    "fetchPage": fetch_page,
    "countWords": count_words,
    "publish": publish,
}
