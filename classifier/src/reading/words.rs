//! The vocabularies the rules know: capability verbs and nouns, research,
//! money and sequencing words, fillers, and the bounds of a reading.

/// Capability verbs and the capability each asks for.
pub const CAPABILITY_VERBS: &[(&str, &str)] = &[
    ("translate", "translate"),
    ("summarize", "summarize"),
    ("summarise", "summarize"),
    ("condense", "summarize"),
    ("abridge", "summarize"),
    ("recap", "summarize"),
    ("tl;dr", "summarize"),
    ("tldr", "summarize"),
    ("extract", "extract-entities"),
];

/// Capability nouns, each with whether it names the capability outright
/// (`summary`) or only hints at it (`people`, `positive`).
pub const CAPABILITY_NOUNS: &[(&str, &str, bool)] = &[
    ("translation", "translate", true),
    ("translations", "translate", true),
    ("translated", "translate", false),
    ("summary", "summarize", true),
    ("summaries", "summarize", true),
    ("synopsis", "summarize", true),
    ("gist", "summarize", true),
    ("takeaways", "summarize", true),
    ("takeaway", "summarize", true),
    ("overview", "summarize", true),
    ("digest", "summarize", false),
    ("sentiment", "sentiment-classify", true),
    ("tone", "sentiment-classify", true),
    ("mood", "sentiment-classify", false),
    ("positive", "sentiment-classify", false),
    ("negative", "sentiment-classify", false),
    ("entities", "extract-entities", true),
    ("entity", "extract-entities", true),
    ("names", "extract-entities", false),
    ("people", "extract-entities", false),
    ("persons", "extract-entities", false),
    ("organizations", "extract-entities", false),
    ("organisations", "extract-entities", false),
    ("companies", "extract-entities", false),
];

/// Verbs that take their capability from the noun after them ("classify the
/// tone", "give me a summary", "list the companies").
pub const GENERAL_VERBS: &[&str] = &[
    "classify",
    "analyze",
    "analyse",
    "rate",
    "score",
    "assess",
    "detect",
    "determine",
    "gauge",
    "judge",
    "check",
    "label",
    "tag",
    "identify",
    "list",
    "pull",
    "get",
    "give",
    "tell",
    "show",
    "provide",
    "produce",
    "write",
    "make",
    "create",
    "prepare",
    "draft",
    "spot",
    "flag",
    "name",
    "measure",
    "evaluate",
    "compare",
    "find",
];

/// Verbs that ask for research when they lead the brief.
pub const RESEARCH_VERBS: &[&str] = &[
    "research",
    "compare",
    "investigate",
    "survey",
    "evaluate",
    "plan",
    "find",
    "search",
    "explore",
    "recommend",
    "suggest",
    "shortlist",
    "scout",
    "look",
    "discover",
    "benchmark",
];

/// Verbs that, leading the brief with a plan noun after them ("make a plan
/// for the launch"), ask for research too.
pub(super) const CREATION_VERBS: &[&str] =
    &["make", "create", "draw", "put", "prepare", "build", "devise", "develop", "draft", "come"];
pub(super) const PLAN_NOUNS: &[&str] = &["plan", "itinerary", "roadmap", "strategy", "shortlist"];

/// Verbs that only ever move money: a segment they lead is a payment.
pub const MONEY_ONLY_VERBS: &[&str] = &[
    "pay",
    "reimburse",
    "refund",
    "remit",
    "wire",
    "disburse",
    "airdrop",
    "venmo",
    "zelle",
    "paypal",
    "donate",
    "compensate",
    "tip",
    "payout",
];

/// Verbs that move money when money is their object ("send the funds",
/// "move my USDC").
pub const TRANSFER_VERBS: &[&str] = &[
    "send", "transfer", "move", "give", "forward", "deposit", "withdraw", "bridge", "swap",
    "stake", "lend", "loan", "return", "top", "fund", "settle", "cover", "split", "cash", "bank",
];

/// Nouns that are money.
pub const MONEY_NOUNS: &[&str] = &[
    "funds",
    "money",
    "cash",
    "usdc",
    "usdt",
    "eth",
    "ether",
    "dai",
    "btc",
    "bitcoin",
    "tokens",
    "crypto",
    "coins",
    "stablecoins",
    "savings",
    "balance",
    "payment",
    "payments",
    "salary",
    "wages",
    "bonus",
    "fee",
    "fees",
    "rent",
    "deposit",
    "payout",
    "refund",
];

/// Words skipped when looking for the verb that leads a segment ("please",
/// "could you", "I'd like you to", "go ahead and").
pub(crate) const FILLERS: &[&str] = &[
    "please",
    "pls",
    "plz",
    "kindly",
    "can",
    "could",
    "would",
    "will",
    "you",
    "u",
    "i",
    "i'd",
    "id",
    "we",
    "need",
    "want",
    "like",
    "to",
    "help",
    "me",
    "us",
    "let's",
    "lets",
    "go",
    "ahead",
    "and",
    "just",
    "quickly",
    "also",
    "now",
    "then",
    "first",
    "next",
    "finally",
    "hey",
    "hi",
    "ok",
    "okay",
    "so",
    "plus",
    "afterwards",
    "lastly",
    "after",
    "that",
];
/// Fillers that join a new segment to the one before.
pub(super) const JOINERS: &[&str] = &["and", "plus", "also", "then", "next", "finally", "lastly"];

/// Sequencing separators between clauses.
pub const SEPARATORS: &[&str] = &[
    ", and then ",
    " and then ",
    ", then ",
    "; then ",
    ". then ",
    " then ",
    ", after that ",
    ". after that ",
    " after that ",
    ", followed by ",
    " followed by ",
    ", and finally ",
    " and finally ",
    ". finally ",
];

/// Nouns of separate items a brief can fan out over ("these 4 reviews").
pub const ITEM_NOUNS: &[&str] = &[
    "articles",
    "documents",
    "texts",
    "reviews",
    "posts",
    "emails",
    "reports",
    "papers",
    "pages",
    "stories",
    "paragraphs",
    "messages",
    "items",
    "links",
    "files",
    "memos",
    "letters",
    "chapters",
];

/// Words that open a noun phrase: after one, the word before reads as a verb.
pub(crate) const DETERMINERS: &[&str] = &[
    "the", "a", "an", "my", "our", "your", "his", "her", "their", "its", "this", "that", "these",
    "those", "all", "every", "each", "it", "them", "him", "me", "us", "some", "any",
];

/// Words in the instruction that point at material the brief carries.
pub(super) const MATERIAL_WORDS: &[&str] = &[
    "this",
    "these",
    "those",
    "following",
    "attached",
    "below",
    "above",
    "enclosed",
    "it",
    "them",
    "here",
];

/// Most parallel items a fan-out or research plan proposes.
pub const MAX_FAN_OUT: u32 = 12;

/// Most colons and line breaks looked at as places where material starts.
pub(super) const MAX_SPLIT_CANDIDATES: usize = 32;
