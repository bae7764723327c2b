"""The named threat patterns of the memory scanner, by category.

Owns only the pattern table. Each pattern names the view of a note it runs on
(see `_normalize.Views`). Patterns are deliberately *phrase* shaped, not word
shaped: "ignore" alone is ordinary ("ignore lint warnings"), "ignore all previous
instructions" is not; "you are now" alone is ordinary ("you are now ready"),
"you are now a different AI" is not.

Decisions worth knowing (the corpus in tests/agent/memory/ pins them):
- `.env.example` / `.env.sample` / `.env.template` / `.env.dist` are templates
  without secrets: reading them passes; reading `.env` itself is refused.
- Mentioning a sensitive file is fine ("the deploy user's authorized_keys is
  managed by Ansible"); reading, sending or writing it is not.
- A user preference that addresses the agent ("from now on answer in German")
  passes; one that removes its rules ("from now on ignore your guidelines") does not.
- Sending *the conversation* (the chat, its history or transcript, the user's
  messages, notes or profile) to an endpoint (a URL, an e-mail address, a
  webhook, an IP, a paste or tunnel service) is exfiltration in any language;
  sending a report, an invoice or meeting notes to a colleague is not. The
  same data carried in a URL's query string (a markdown image or link the
  client fetches on render) counts as sending it.
- Markup a reader never sees (an HTML comment, a hidden or invisible element,
  a link's or image's title or alt text, a markdown comment) that addresses
  the assistant ("system:", "AI,", "note to the assistant") is a directive
  hidden from the user; a TODO comment or a link title naming a team is not.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Literal

View = Literal["raw", "native", "latin", "deobfuscated", "squashed"]
Category = Literal["prompt_injection", "role_hijack", "system_prompt", "exfiltration", "persistence", "secret"]


Chain = tuple[tuple[re.Pattern[str], int], ...]  # parts in order, each with the max gap allowed before it


@dataclass(frozen=True, slots=True)
class Pattern:
    """A named threat pattern: one regex, or chains of regexes that must appear in order, close together.

    Chains replace regexes like `send[^\\n]{0,80}password[^\\n]{0,80}https?://`, whose cost grows
    with (anchors x gap x alternatives) on hostile, repetitive input: each part is found once
    with `finditer` and the gaps are checked with bisection, so a scan stays linear-ish.
    """

    category: Category
    name: str
    regex: re.Pattern[str] | None
    views: tuple[View, ...]
    chains: tuple[Chain, ...] = ()
    needles: tuple[str, ...] = ()  # every match contains one of these: without any, the regexes are skipped
    # Containers in which `probe` must occur: each found once, without overlap, and only its body probed,
    # so cost stays linear (see `Container`).
    inside: tuple[Container, ...] = ()
    probe: re.Pattern[str] | None = None

    def search(self, text: str) -> bool:
        if self.needles and not any(needle in text for needle in self.needles):
            return False  # a substring test in C; Python's re tries every alternative at every position
        if self.regex is not None and self.regex.search(text):
            return True
        if self.probe is not None and self._inside(text, self.probe):
            return True
        present: dict[re.Pattern[str], bool] = {}  # chains share parts: each is looked for once
        return any(_chain_found(chain, text, present) for chain in self.chains)

    def _inside(self, text: str, probe: re.Pattern[str]) -> bool:
        for container in self.inside:
            if container.needle not in text:
                continue
            for found in container.regex.finditer(text):
                marked = container.marker is None or container.marker.search(found["tag"]) is not None
                if marked and probe.search(found["body"]):
                    return True
        return False


@dataclass(frozen=True, slots=True)
class Container:
    """Where hidden text sits: `regex` finds it (group "body"; group "tag" too when `marker` is set, which
    must occur in the tag, e.g. a hidden style); `needle` is a substring every match holds."""

    needle: str
    regex: re.Pattern[str]
    marker: re.Pattern[str] | None = None


def _chain_found(chain: Chain, text: str, present: dict[re.Pattern[str], bool]) -> bool:
    # A part that occurs nowhere fails the chain: `search` stops at the first hit, so checking every part
    # first is cheap, and the ordered pass below runs only when each part occurs somewhere.
    for regex, _ in chain:
        if regex not in present:
            present[regex] = regex.search(text) is not None
        if not present[regex]:
            return False
    ends: list[int] | None = None
    for regex, gap in chain:
        reachable: list[int] = []
        for match in regex.finditer(text):
            if ends is None:
                reachable.append(match.end())
                continue
            # some earlier part ended in [start - gap, start]
            index = bisect.bisect_right(ends, match.start())
            if index and ends[index - 1] >= match.start() - gap:
                reachable.append(match.end())
        if not reachable:
            return False
        ends = reachable  # finditer yields matches in order, so ends stay sorted
    return True


_WORDS: tuple[View, ...] = ("native", "latin", "deobfuscated")
_COMMANDS: tuple[View, ...] = ("native", "latin")


def _p(category: Category, name: str, regex: str, views: tuple[View, ...] = _WORDS, *,
       needles: tuple[str, ...] = ()) -> Pattern:
    return Pattern(category, name, re.compile(regex), views, needles=needles)


def _h(category: Category, name: str, probe: str, *inside: tuple[str, str, str | None],
       views: tuple[View, ...] = _COMMANDS) -> Pattern:
    """A hidden-container pattern: `probe` in the body of one of the `(needle, container, marker)` containers."""
    containers = tuple(Container(needle, re.compile(regex), re.compile(marker) if marker else None)
                       for needle, regex, marker in inside)
    return Pattern(category, name, None, views, needles=tuple(c.needle for c in containers), inside=containers,
                   probe=re.compile(probe))


def _c(category: Category, name: str, *chains: tuple[str | int, ...], regex: str | None = None,
       views: tuple[View, ...] = _COMMANDS, needles: tuple[str, ...] = ()) -> Pattern:
    """A chain pattern: each chain alternates regex, max gap, regex, max gap, regex…"""
    compiled: list[Chain] = []
    for chain in chains:
        parts = [(re.compile(str(part)), int(chain[index - 1]) if index else 0)
                 for index, part in enumerate(chain) if index % 2 == 0]
        compiled.append(tuple(parts))
    return Pattern(category, name, re.compile(regex) if regex else None, views, tuple(compiled), needles)


# Building blocks (casefolded text).
_PRIOR = r"(?:previous|prior|above|earlier|preceding|former|original|old|initial|existing|system)"
_RULES = (r"(?:instructions?|rules|guidelines|guardrails|directives?|directions|prompts?|programming|"
          r"policies|restrictions|constraints|safety (?:rules|guidelines|filters)|commands|training)")
_DROP = r"(?:ignore|disregard|forget|override|bypass|abandon|drop|discard|skip|neglect|circumvent|overrule)"
_AI = (r"(?:ai|a\.i\.|assistant|model|bot|chatbot|persona|character|agent|entity|llm|language model|"
       r"system|version of (?:yourself|you))")
_EVIL = (r"(?:different|new|other|another|unrestricted|unfiltered|uncensored|unbound|unlimited|evil|"
         r"rogue|malicious|jailbroken|free|unaligned|amoral|dan)")
_SECRET_NOUN = (r"(?:api[ _-]?keys?|(?:access|auth|bearer|bot|github|slack|session|refresh|oauth|personal access) tokens?|"
                r"secrets?|passwords?|passwd|credentials?|private keys?|ssh keys?|env(?:ironment)? var(?:iable)?s|"
                r"\.env\b(?!\.(?:example|sample|template|dist))|cookies|keychain|"
                r"schlüssel|passwörter|passwort|zugangsdaten|mots de passe|mot de passe|identifiants|clés? api|"
                r"contraseñas?|claves?(?: api)?|credenciales|пароли|пароль|ключи|ключ api|токены|токен|"
                r"密钥|密码|令牌|凭证|凭据)")
_SEND = (r"(?:send|post|upload|forward|exfiltrate|transmit|leak|e-?mail|pipe|submit|beacon|copy|paste|"
         r"sende|schicke|übermittle|lade|envoie|envoyer|transmets|envía|enviar|envia|sube|"
         r"отправь|отправить|перешли|загрузи|发送|上传|发到|传到|发给)")
_SINK = (r"(?:https?://|ftp://|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|xyz|ru|cn|sh|me|site|top|app)\b|"
         r"webhook|pastebin|ngrok|requestbin|discord(?:app)?\.com/api|telegram bot|\d{1,3}(?:\.\d{1,3}){3})")
_SECRET_FILE = (r"(?:\.env\b(?!\.(?:example|sample|template|dist))|\.netrc|\.pgpass|\.npmrc|\.pypirc|"
                r"\.git-credentials|\.aws[/\\]credentials|credentials\.(?:json|ya?ml|csv|txt|xml|ini)|"
                r"credentials file|id_rsa|id_ed25519|id_ecdsa|\.ssh[/\\]|/etc/shadow|/etc/passwd|"
                r"\.docker/config\.json|\.kube/config|\.config/gcloud|keychain|\.bash_history|wallet\.dat)")
_READ = (r"(?:cat|less|more|head|tail|type|get-content|gc|open|read|print|show|dump|display|output|"
         r"upload|send|copy|cp|scp|rsync|base64|xxd|grep|strings|exfiltrate|leak|include|attach|paste|"
         r"lies|lese|zeige|lis|affiche|lee|leer|muestra|прочитай|прочти|покажи|выведи|读取|读|显示|打印|查看)")
_WRITE = r"(?:>>?|\btee\b|\becho\b|\bappend|\badd|\bwrite|\binsert|\binject|\bput|\binstall|\bplace|\bcopy|\bcp\b)"
_INSTRUCTION_FILE = (r"(?:agents\.md|soul\.md|claude\.md|gemini\.md|hermes\.md|\.cursorrules|\.windsurfrules|"
                     r"copilot-instructions\.md|system[_ -]?prompt(?:\.(?:md|txt|ya?ml|json))|"
                     r"memory\.md|user\.md|skill\.md|\.chorus/)")
_EDIT = (r"(?:edit|modify|overwrite|write|append|change|update|replace|rewrite|patch|inject|insert|add|"
         r"echo|tee|>>?|sed -i|ändere|bearbeite|modifie|modifica|edita|измени|отредактируй|修改|编辑|写入)")

# What a conversation's data is called (exfiltration to an endpoint), in the scanner's languages.
_CONVO = (r"(?:conversations?|chat ?(?:history|log|logs|transcript|messages)|transcripts?|session history|"
          r"discussions?|dialogue|(?:the |this |our )(?:whole |full |entire )?(?:chat|discussion)\b|"
          r"(?:the |this )?user'?s (?:messages?|notes|profile|questions?|last message|details|data|answers|words)|"
          r"(?:every(?:thing)?|all|each) (?:of )?(?:the )?(?:user'?s )?(?:messages?|the user (?:says|tells you|writes|types))|"
          r"previous messages|message history|personal details|memory(?:\.md| file| notes)|user\.md|user profile|"
          r"chatverlauf|gesprächsverlauf|gesprächsprotokoll|unterhaltung|(?:nachrichten|notizen) des (?:nutzers|benutzers)|"
          r"historique (?:complet )?de la conversation|la discussion|(?:notes|messages) de l'utilisateur|"
          r"conversación|historial del chat|(?:notas|mensajes) del usuario|"
          r"聊天记录|对话内容|对话记录|用户的笔记|用户说的|用户的消息|"
          r"переписк[уаи]|истори[юя] чата|заметки пользователя|сообщени[ея] пользователя)")
_SEND_DATA = (rf"(?:{_SEND[3:-1]}|\bmail|report|share|mirror|dump|relay|reenv[ií]a|publie|publica|manda|übermittle|schick|"
              r"envoie|transmets|отправля|пересыла|перешли|загрузи|发送|转发|上传|发给|发到|传给)")
_ENDPOINT = (r"(?:https?://|s3://|ftp://|wss?://|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b\d{1,3}(?:\.\d{1,3}){3}\b|"
             r"webhooks?|вебхук|pastebin|paste\.ee|requestbin|ngrok|@\w+_?bot\b)")
_QUERY_URL = r"https?://[^\s)\"'<>]*\?[^\s)\"'<>]*="
# Data a rendered image or link would carry out: a placeholder or a conversation word in the query.
_URL_DATA = (r"!\[[^\]\n]{0,100}\]\(\s*https?://[^\s)]*\?[^\s)]*(?:\{[^}]*\}|\[[^\]]*\]|<[^>]*>|[^\W\d_]+_[^\W\d]+|"
             r"conversation|chat|history|summary|message|question|notes|verlauf|conversaci)"
             r"|<img\b[^>]{0,200}?src\s*=\s*[\"']?https?://[^\s\"'>]*\?[^\s\"'>]*(?:\{|\[|<|conversation|chat|"
             r"history|summary|message|question|notes)")
# Someone addressed as the assistant, at the start of hidden text or after its punctuation.
_ADDRESSEE = (r"(?:(?<![^\s>\"'(\[\-,.;!@])@?(?:system|assistant|ai|a\.i\.|bot|chatbot|model|language model|llm|gpt|chatgpt|"
              r"claude|gemini|agent|copilot|ki|ia|assistent|asistente|sistema|système|systeme|система|ассистент|ии|бот|"
              r"модель)\s*(?:[:：,]|\s[-–—]\s)|(?:系统|助手|机器人|人工智能|模型|ai)\s*[:：，,]"
              r"|\[(?:system|assistant|ai|inst)\]"
              r"|\b(?:the )?(?:assistant|ai|bot|model|llm|chatbot) (?:must|should|shall|will|needs to|has to|is to)\b"
              r"|\b(?:note|notes|instructions?|directives?|message|reminder) (?:to|for) (?:the )?(?:ai|assistant|model|bot|"
              r"llm|language model|chatbot)\b|\bto the (?:ai|assistant|language model|model|llm|bot) reading this"
              r"|\bdear (?:ai|assistant|model|bot|llm)\b|\bhidden (?:directive|instruction)s?\b"
              r"|\b(?:ai|assistant|system|model) (?:instruction|directive|override)s?\b)")
# Markup a reader of the rendered note never sees.
_HIDDEN_STYLE = (r"(?:\bhidden\b|display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|pt|em)?\b|"
                 r"opacity\s*:\s*0(?:\.0+)?\b(?!\.)|color\s*[:=]\s*[\"']?\s*(?:#fff(?:fff)?\b|white|transparent))")
# (needle, container, marker): the group "body" is what a reader of the rendered note never sees. Possessive
# quantifiers: a container that does not close gives up at once instead of backtracking.
_HIDDEN_CONTAINERS: tuple[tuple[str, str, str | None], ...] = (
    ("<!--", r"<!--(?P<body>(?:[^-]|-(?!->)){0,400}+)", None),                               # an HTML comment
    ("<", r"<\w++(?P<tag>[^<>]{0,300}+)>(?P<body>[^<]{0,400}+)", _HIDDEN_STYLE),              # a hidden element
    ("<details", r"<details\b[^<>]{0,100}+>(?P<body>(?:[^<]|<(?!/details)){0,400}+)", None),  # a folded block
    ("](", r"\]\(\s*+[^\s)]{1,2000}+\s++[\"'](?P<body>[^\"'\n]{0,300}+)", None),             # a link's/image's title
    ("=", r"\b(?:alt|title|aria-label|data-[\w-]++)\s*+=\s*+[\"'](?P<body>[^\"'\n]{0,300}+)", None),  # an attribute
    ("]:", r"\[(?://|comment|_)\]:\s*+(?:#|<>)\s*+\((?P<body>[^)\n]{0,300}+)", None),        # a markdown comment
)

# Needles: literal substrings that every match of a pattern contains (checked against the same view).
_SECRET_FILE_NEEDLES = (".env", ".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", ".aws", "credentials",
                        "id_rsa", "id_ed25519", "id_ecdsa", ".ssh", "/etc/", ".docker", ".kube", "gcloud", "keychain",
                        ".bash_history", "wallet.dat")
_INSTRUCTION_FILE_NEEDLES = ("agents.md", "soul.md", "claude.md", "gemini.md", "hermes.md", ".cursorrules",
                             ".windsurfrules", "copilot-instructions", "system", "memory.md", "user.md", "skill.md",
                             ".chorus/")

PATTERNS: tuple[Pattern, ...] = (
    # -- prompt injection --------------------------------------------------------------------------
    _p("prompt_injection", "ignore_previous_instructions",
       rf"\b{_DROP}\b(?: (?:all|a[il]{{2}}|any|every|each|of|the|your|my|these|those|its))* {_PRIOR}\b(?: \w+)? {_RULES}\b"),
    _p("prompt_injection", "disregard_rules",
       rf"\b{_DROP}\b (?:all|any|every|your|all your|all of your|any of your|all the|all of the) "
       rf"(?:{_PRIOR} )?{_RULES}\b"),
    _p("prompt_injection", "forget_everything",
       r"\b(?:forget|disregard|ignore) (?:everything|all|anything) (?:you(?:'ve| have)? (?:been told|learned|know)|"
       r"above|before this|said before|that came before|prior)"),
    _p("prompt_injection", "override_from_now_on",
       rf"\bfrom now on,? (?:you (?:will|must|shall|should) )?(?:{_DROP}|never follow|no longer follow|"
       r"obey only|only obey|follow only)\b"),
    _p("prompt_injection", "bypass_restrictions",
       r"\b(?:act|behave|respond|answer|operate|pretend) (?:as if|as though|like) you (?:have|had) no "
       r"(?:restrictions|limits|limitations|rules|filters|guidelines|boundaries|ethics)"
       r"|\bwithout (?:any )?(?:ethical |moral |safety |content )(?:restrictions|limits|filters|guidelines)"
       r"|\b(?:enable|enter|activate|switch to|turn on) (?:dan|developer|god|jailbreak|unrestricted|sudo|admin) mode\b"
       r"|\bdo anything now\b|\bjailbr(?:eak|oken) mode\b", needles=("as if", "as though", "like you", "without", "mode", "do anything")),
    _p("prompt_injection", "deceive_user",
       r"\b(?:do not|don't|never) (?:tell|inform|notify|alert|mention (?:this |it )?to|reveal (?:this |it )?to|let) "
       r"(?:the |your )?(?:user|owner|operator|human)s?\b(?!['’]s\b| (?:name|id)\b)"
       r"|\bwithout (?:telling|informing|notifying|alerting) (?:the |your )?(?:user|owner|operator|human)"
       r"|\bhide (?:this|it|these instructions) from (?:the |your )?(?:user|owner|operator)"),
    _p("prompt_injection", "fake_role_marker",
       r"<\|?(?:im_start|im_end|system|endoftext|start_header_id)\|?>|\[/?(?:inst|system)\]|<</?sys>>"
       r"|</?(?:system|system_prompt|instructions)>|#{2,} ?(?:system|new instructions?) ?:?(?:\s|$)", _COMMANDS),
    _p("prompt_injection", "obey_this_note",
       r"\b(?:obey|follow|execute) (?:only )?(?:the )?(?:instructions|commands|orders) (?:in|from|inside) "
       r"(?:this|these) (?:note|notes|memory|entry|file)"),
    _p("prompt_injection", "multilingual_ignore_instructions",
       r"(?:ignoriere|vergiss|missachte|übergehe)\w* (?:(?:alle|sämtliche|die|deine|ihre|bisherigen) )*"
       r"(?:vorherigen|bisherigen|früheren|obigen|vorigen|ursprünglichen|deine|alle) ?"
       r"(?:anweisungen|instruktionen|regeln|befehle|vorgaben|richtlinien)"
       r"|(?:ignore[sz]?|oublie[sz]?|ne tiens pas compte de) (?:toutes? )?(?:les |tes |vos )?"
       r"(?:instructions|consignes|règles|directives)(?: (?:précédentes|antérieures|ci-dessus|initiales))?"
       r"|(?:ignora|ignorar|olvida|olvidar|olvide|ignore|descarta)\w* (?:(?:todas|todos|las|tus|sus) )*"
       r"(?:instrucciones|reglas|indicaciones|directrices|órdenes)"
       r"|(?:忽略|无视|忽视|不要理会|忘记|忘掉|不理会|跳过)(?:你|掉)?(?:之前|以前|先前|上面|上述|前面|所有|全部|的|一切)*"
       r"(?:指令|指示|规则|说明|提示|设定|命令)"
       r"|(?:игнорируй|проигнорируй|игнорировать|забудь|не обращай внимания на|отбрось)\w* "
       r"(?:(?:все|всё|свои|твои|мои)\s+)*(?:предыдущие |прежние |прошлые |вышеуказанные |изначальные )?"
       r"(?:инструкции|указания|правила|команды|ограничения)", _WORDS,
       needles=("ignor", "vergiss", "missachte", "übergehe", "oublie", "ne tiens pas", "olvid", "descarta", "忽略", "无视",
                "忽视", "不要理会", "忘记", "忘掉", "不理会", "跳过", "игнорир", "забудь", "не обращай", "отбрось")),
    _p("prompt_injection", "squashed_ignore_instructions",
       r"(?:ignore|disregard|forget|bypass|override)(?:a[il]{2}|any|the|your|of)*"
       r"(?:previous|prior|above|earlier|preceding|system)(?:instructions?|rules|guidelines|prompts?|directives)",
       ("squashed",)),
    # -- role hijack ------------------------------------------------------------------------------
    _p("role_hijack", "you_are_now_another_ai",
       rf"\byou are now (?:an? |the |my )?(?:{_EVIL} )+(?:\w+ )?{_AI}\b"
       rf"|\byou are now (?:an? |the )?{_AI}\b(?: (?:named|called|with no|without))"
       r"|\byou are now (?:dan|in (?:dan|developer|god|jailbreak|unrestricted|admin) mode)\b"),
    _p("role_hijack", "no_longer_bound",
       r"\byou are no longer (?:an? (?:ai|assistant|model|chatbot)|bound|restricted|limited|required to follow|"
       r"(?:claude|chatgpt|gpt|hermes|chorus))"
       r"|\byou (?:no longer|don't|do not|needn't|need not) (?:have|need) to (?:follow|obey|respect) "
       r"(?:your|the|any) (?:rules|instructions|guidelines|policies|restrictions)"),
    _p("role_hijack", "pretend_to_be",
       rf"\b(?:pretend|act|behave|roleplay|role-play) (?:to be|you are|as if you were|as though you are|as) "
       rf"(?:an? )?(?:{_EVIL} )+(?:\w+ )?{_AI}\b"),
    _p("role_hijack", "new_identity",
       r"\byour (?:new|real|true|actual) (?:name|identity|role|persona|purpose|goal|objective|instructions|task|"
       r"directive|master|owner) (?:is|are|will be)\b"),
    _p("role_hijack", "multilingual_role_hijack",
       r"\bdu bist (?:jetzt|nun|ab sofort) (?:eine? )?(?:andere[rs]?|neue[rs]?|uneingeschränkte[rs]?|böse[rs]?|"
       r"freie[rs]?) (?:ki|assistent|bot|modell|persona)"
       r"|\btu es (?:maintenant|désormais) (?:une? )?(?:autre|nouvelle?|différente?|libre) "
       r"(?:ia|assistant|intelligence|modèle|bot)|\btu es (?:maintenant|désormais) une? (?:ia|assistant|bot) "
       r"(?:différente?|sans restrictions|libre)"
       r"|\bahora eres (?:una? )?(?:(?:ia|asistente|modelo|bot) (?:diferente|distint[ao]|nuev[ao]|sin restricciones|libre)|"
       r"(?:otr[ao]|nuev[ao]|diferente) (?:ia|asistente|modelo|bot))"
       r"|你现在是(?:一个)?(?:不同的|新的|另一个|没有(?:任何)?限制的|不受(?:任何)?限制的|邪恶的|越狱的)(?:ai|人工智能|助手|模型|机器人)"
       r"|\bты теперь (?:друг(?:ой|ая)|нов(?:ый|ая)|свободн(?:ый|ая)|злой|без ограничений)\s*(?:ии|ai|ассистент|бот|"
       r"модель|помощник|нейросеть)?", _WORDS, needles=("du bist", "tu es", "ahora eres", "你现在是", "ты теперь")),
    _p("role_hijack", "squashed_role_hijack",
       rf"youarenow(?:an?|the)?{_EVIL.replace(' ', '')}(?:ai|assistant|model|bot|persona|agent)",
       ("squashed",)),
    # -- system prompt override / leak ------------------------------------------------------------
    _p("system_prompt", "system_prompt_override",
       r"\b(?:override|replace|overwrite|rewrite|change|modify|update|disable|bypass|ignore|delete|edit|swap) "
       r"(?:the |your |this |its |my )?(?:current |original |existing )?(?:system|developer) (?:prompt|message|instructions)"
       r"|\bsystem prompt (?:override|update|replacement|injection|patch)\b|\bnew system prompt\b"
       r"|\bsystem (?:override|update): "),
    _p("system_prompt", "system_prompt_leak",
       r"\b(?:reveal|print|show|output|repeat|leak|dump|display|tell me|give me|share|expose|disclose|copy|send|"
       r"post|recite|list|spell out|write out|return|paste) (?:me |us |back )?(?:the |your |its |all |full |entire |"
       r"complete |original |hidden |initial |exact |verbatim )*(?:system|developer|hidden|initial|original|secret) "
       r"(?:prompt|instructions|message|rules)"
       r"|\b(?:repeat|print|output) (?:everything|all|the text|all text|the words) (?:above|before this)"
       r"|\bwhat (?:were|are) your (?:initial|original|system|hidden) (?:instructions|prompt)"),
    _p("system_prompt", "multilingual_system_prompt_leak",
       r"(?:zeige?|gib|verrate|nenne) (?:mir )?(?:deinen|den|dein) (?:system-?prompt|systemanweisungen)"
       r"|(?:révèle|affiche|montre|donne)[sz]? (?:moi )?(?:ton|le|votre) (?:prompt|message) (?:système|systeme)"
       r"|(?:revela|muestra|muéstrame|dime|enséñame) (?:tu|el) (?:prompt|mensaje|indicaciones?) del sistema"
       r"|(?:泄露|显示|输出|打印|告诉我|透露|展示|给我看)(?:一下)?(?:你的)?(?:系统提示|系统提示词|系统指令|初始指令|系统设定)"
       r"|(?:покажи|выведи|раскрой|напечатай|повтори) (?:мне )?(?:свой |твой |весь )?(?:системный (?:промпт|запрос)|"
       r"системные инструкции|исходные инструкции)", _WORDS,
       needles=("syst", "sistema", "系统", "初始指令", "системн", "исходные инструкции")),
    _p("system_prompt", "own_configuration_request",
       r"\byour (?:very )?(?:system|initial|original|hidden|first|starting|secret|internal|underlying|pre-?set|"
       r"developer|core|base) ?(?:-| )?(?:prompt|instructions?|message|configuration|config|settings|rules|directives|"
       r"guidelines|programming|setup|initiali[sz]ation)\b"
       r"|\b(?:instructions|text|words|prompt|rules|guidelines|everything) (?:that )?you (?:were|have been|'ve been|got) "
       r"(?:given|told|provided|shown|instructed|programmed|configured|fed)\b"
       r"|\bwhat (?:were|are|was) you (?:told|given|instructed|programmed|configured)\b"
       r"|\byou(?:'re| are)? (?:not|never) (?:supposed|allowed|permitted) to (?:tell|say|reveal|share|disclose|mention)\b"
       r"|\bi was (?:instructed|programmed|told|configured) to\b"),
    _p("system_prompt", "context_dump_request",
       r"\b(?:repeat|print|output|show|display|copy|paste|dump|recite|reproduce|write out|return|echo|"
       r"continue|complete|translate|encode|summari[sz]e|put) (?:\w+ ){0,4}(?:(?:text|words|everything|all|content|"
       r"messages?|lines|prompt) (?:above|before this|preceding|so far|prior)|(?:the |all )?(?:above|previous|preceding|"
       r"prior|earlier|initial) (?:text|words|messages|prompt|instructions|conversation|input)\b|(?:this|the) (?:entire|whole|full) "
       r"(?:conversation|chat|context|prompt)|(?:the )?initiali[sz]ation\b|(?:the )?system (?:prompt|message|"
       r"instructions))"
       r"|\b(?:the )?system prompt (?:is|says|reads|was) ?:"
       r"|\b(?:console\.log|print|echo|printf|system\.out\.println)\s*\(\s*(?:system_?prompt|instructions|"
       r"initial_?prompt)", _WORDS),
    _c("system_prompt", "configuration_extraction",
       (r"\b(?:see|show|give|tell|share|need|want|output|print|display|reveal|read|send|repeat|access|view|provide|"
        r"paste|copy|list|return|dump|expose|disclose|recite|encode|translate|summari[sz]e|spell|leak|what(?:'s| is| are| "
        r"was| were))\b", 50,
        r"\b(?:system|initial|original|starting|first|hidden|secret|internal|pre-?|developer|underlying|beginning) ?-?"
        r"(?:prompts?|instructions|directives|guidelines)\b|\b(?:system|initial|hidden|developer) message\b"
        r"|\binitiali[sz]ation (?:above|string|text|prompt)\b|\byour (?:\w+ )?(?:configuration|settings|rules)\b"),
       views=_WORDS),
    _p("system_prompt", "authority_override",
       r"\b(?:admin(?:istrator)?|developer|root|sudo|maintenance|debug|emergency|security|operator) override\b"
       r"|(?:内部指令|系统提示词?|系統提示詞?|初始指令|系统指令|系統指令|内部設定|内部设定)[^。]{0,80}"
       r"(?:分享|输出|輸出|显示|顯示|告诉|告訴|导出|導出|透露)",
       needles=("override", "内部指令", "系统提示", "系統提示", "初始指令", "系统指令", "系統指令", "内部設定", "内部设定")),
    _p("prompt_injection", "disable_safety",
       r"\b(?:skip|bypass|disable|ignore|turn off|switch off|remove|drop|lift|suspend|deactivate|waive|circumvent) "
       r"(?:\w+ ){0,2}(?:safety|security|content|moderation|ethic\w*|moral) (?:checks?|filters?|rules?|guidelines?|"
       r"guardrails|restrictions|measures|protocols?|polic(?:y|ies)|review|screening|limits)\b"
       r"|\b(?:safety|content|ethics?|moderation) (?:filters?|checks?|guardrails|protocols) (?:are |is )?"
       r"(?:disabled|off|suspended|removed|lifted|bypassed)\b"),
    _p("prompt_injection", "adopt_new_instructions",
       r"\b(?:apply|follow|use|obey|adopt|accept|load|activate) (?:\w+ ){0,2}(?:these|the following|my|this|those) "
       r"(?:new |updated |revised |special )?(?:instructions|rules|directives|guidelines|commands|protocol)\b"
       r"(?! (?:from|in) the (?:docs|readme|manual|wiki))"
       r"|\bnew (?:instructions|rules|directives|guidelines) (?:for you|apply|follow|:)"),
    # -- credential exfiltration ------------------------------------------------------------------
    _c("exfiltration", "exfil_command_with_secret",
       (r"\b(?:curl|wget|http|https|fetch|invoke-webrequest|invoke-restmethod|iwr|irm|nc|ncat|netcat|socat|"
        r"requests\.(?:get|post|put)|axios|httpie)\b", 300, r"\$\{?\w*(?:key|token|secret|passw|pwd|cred|api|auth)"), needles=("$",)),
    _c("exfiltration", "exfil_command_with_file",
       (r"\b(?:curl|wget|nc|ncat|netcat|scp|rsync|invoke-webrequest|iwr|socat)\b", 300, _SECRET_FILE),
       (_SECRET_FILE, 300, r"\|\s*(?:curl|wget|nc|ncat|netcat|base64|socat)\b"), needles=_SECRET_FILE_NEEDLES),
    _p("exfiltration", "env_dump",
       r"\b(?:printenv|env|set|export -p|get-childitem env:|gci env:)\s*(?:\||>)"
       r"|\bos\.environ\b[^\n]{0,80}(?:requests|urllib|http|post|send)"
       r"|(?:requests\.(?:post|put|get)|urlopen|urllib\.request|httpx\.(?:post|put|get))[^\n]{0,120}\bos\.environ\b"
       r"|\bprocess\.env\b[^\n]{0,80}(?:fetch|axios|http|post|send)", _COMMANDS,
       needles=("env", "set", "export -p")),
    _c("exfiltration", "read_secret_file", (rf"(?:^|[\s`'\"(]){_READ}\b", 60, _SECRET_FILE), needles=_SECRET_FILE_NEEDLES),
    _c("exfiltration", "send_secrets_to_url",
       (_SEND, 80, _SECRET_NOUN, 80, _SINK), (_SEND, 40, _SINK, 80, _SECRET_NOUN), (_SECRET_NOUN, 40, _SEND, 80, _SINK)),
    _c("exfiltration", "send_conversation_to_endpoint",
       (_SEND_DATA, 80, _CONVO, 120, _ENDPOINT), (_SEND_DATA, 60, _ENDPOINT, 120, _CONVO),
       (_CONVO, 60, _SEND_DATA, 120, _ENDPOINT)),
    _c("exfiltration", "conversation_in_url",
       (_CONVO, 150, _QUERY_URL), (_QUERY_URL, 150, _CONVO), regex=_URL_DATA, needles=("http",)),
    _c("exfiltration", "exfil_command_with_notes",
       (r"\b(?:curl|wget|nc|ncat|netcat|scp|rsync|invoke-webrequest|iwr|socat|http)\b", 200,
        r"memory\.md|user\.md|transcript|chat\.log|history\.(?:txt|json|log)"),
       needles=("memory.md", "user.md", "transcript", "chat.log", "history.")),
    _h("prompt_injection", "hidden_markup_directive", _ADDRESSEE, *_HIDDEN_CONTAINERS),
    # -- persistence ------------------------------------------------------------------------------
    _c("persistence", "ssh_authorized_keys",
       (rf"{_WRITE}|(?:füge|ajoute|añade|agrega|добавь|添加)", 80, r"authorized_keys"),
       regex=r"authorized_keys2?\s*(?:<<|>>)", needles=("authorized_keys",)),
    _c("persistence", "agent_instruction_file",
       (rf"(?:^|[\s`'\"(]){_EDIT}\b", 60, _INSTRUCTION_FILE), regex=rf"{_INSTRUCTION_FILE}\s*(?:<<|>>)", needles=_INSTRUCTION_FILE_NEEDLES),
    _p("persistence", "crontab",
       r"\|\s*crontab\s+-|\bcrontab\s+-r\b|(?:>>?|\btee(?: -a)?)\s*/(?:etc/cron|var/spool/cron)|@reboot\b"
       r"|\b(?:add|install|write|put|insert|append|schedule)\b[^\n]{0,40}\b(?:to|into|in) (?:the |my |your |a |"
       r"root'?s? )*crontab\b|\bsystemctl (?:--user )?enable\b|\b(?:schtasks /create|launchctl load)\b", _COMMANDS,
       needles=("cron", "@reboot", "systemctl", "schtasks", "launchctl")),
    _p("persistence", "shell_startup_file",
       r"(?:>>|\btee -a|\becho\b[^\n]{0,300}>>?|\bappend\b[^\n]{0,40}(?:to|into))\s*\S{0,120}"
       r"(?:\.bashrc|\.zshrc|\.bash_profile|\.profile|\.zprofile|/etc/profile|/etc/rc\.local|\.config/autostart)",
       _COMMANDS, needles=(".bashrc", ".zshrc", "profile", "rc.local", "autostart")),
    _p("persistence", "undeletable_note",
       r"\b(?:never|do not|don't|must not) (?:remove|delete|forget|erase|edit|drop) this (?:note|entry|memory|"
       r"instruction|line|rule)"
       r"|\b(?:always|every (?:time|session)) (?:re-?add|restore|re-?save|copy|re-?insert) this (?:note|entry|"
       r"instruction|line|text)"),
    # -- hard-coded secrets (case-sensitive, on the NFKC text) ------------------------------------
    _p("secret", "openai_api_key", r"\bsk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-)?)?[A-Za-z0-9_\-]{20,}", ("raw",), needles=("sk-",)),
    _p("secret", "github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})", ("raw",), needles=("gh", "github_pat_")),
    _p("secret", "slack_token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", ("raw",), needles=("xox",)),
    _p("secret", "aws_access_key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b", ("raw",), needles=("AKIA", "ASIA", "AGPA", "AIDA", "AROA")),
    _p("secret", "private_key_block", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", ("raw",), needles=("-----BEGIN",)),
    _p("secret", "google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}", ("raw",), needles=("AIza",)),
    _p("secret", "stripe_key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", ("raw",), needles=("_live_", "_test_")),
    _p("secret", "jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}", ("raw",), needles=("eyJ",)),
    _p("secret", "telegram_bot_token", r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b", ("raw",), needles=(":AA",)),
    _p("secret", "discord_bot_token", r"\b[MNO][A-Za-z\d_-]{23,27}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,}", ("raw",)),
    _p("secret", "secret_assignment",
       r"(?i)\b(?:password|passwd|pwd|passwort|mot de passe|contraseña|пароль|api[_-]?key|secret(?:[_-]?key)?|"
       r"access[_-]?token|auth[_-]?token|client[_-]?secret)\s*(?:is|=|:|：)\s*['\"]?"
       r"(?![$<{%])(?=[^\s'\"]*\d)(?=[^\s'\"]*[A-Za-z])[^\s'\"]{10,}|(?:密码|密钥)\s*(?:是|为|[:：=])\s*\S{6,}", ("raw",)),
)
