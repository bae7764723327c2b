"""The bot's own words, in the chat's language: message catalogues and the choice of language.

Owns `Phrase` (a text the gateway writes itself, made only by a catalogue
lookup), `say` / `say_n` (look a msgid up in one language, fill its fields),
`as_is` (words that are not the bot's own, shown unchanged), `joined`, the
languages the catalogues hold, and `language_for` (which language a message is
answered in). The catalogues are gettext `.po` files under `locales/`, read
with Babel once per language at first use. See docs/architecture.md, "Adding a
text the bot says".
"""
from gateway.i18n.choose import language_for, sender_language
from gateway.i18n.texts import DEFAULT_LANGUAGE, LANGUAGES, NOTHING, Phrase, as_is, joined, msgid, say, say_n

__all__ = ["DEFAULT_LANGUAGE", "LANGUAGES", "NOTHING", "Phrase", "as_is", "joined", "language_for", "msgid", "say", "say_n",
           "sender_language"]
