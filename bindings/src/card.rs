//! The agent card: who an agent is and what it sells, and the one way a
//! card travels as the registry's metadata URI.
//!
//! A card is written in YAML by whoever runs a worker (loading lives in
//! `tessera-workers`) and published as JSON in a `data:application/json,`
//! URI, percent-encoded ([`AgentCard::to_uri`]). [`AgentCard::from_uri`]
//! reads any inline JSON `data:` URI back (percent-encoded, raw or base64)
//! and validates it: anyone can register any URI, so it is hostile input.
//!
//! Prices are [`Price`]s, a [`Usdc`] amount with the card's notation rules;
//! capability names follow the one rule of [`crate::capability`].

use std::{collections::HashSet, fmt};

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use crate::{
    capability,
    describe::{Describe, DescribeError, ResultSchema},
    envelope::{EnvelopeCodec, EnvelopeError, percent_data_uri},
    usdc::{Usdc, UsdcError},
};

/// Longest agent id, in bytes.
pub const MAX_ID_LEN: usize = 64;

/// Largest card URI payload read back, in bytes.
pub const MAX_CARD_BYTES: usize = 64 * 1024;

/// The `model` value that selects the built-in deterministic runner.
pub const OFFLINE_MODEL: &str = "offline";

/// The `model` a published card shows when a `handler` does the work.
pub const HANDLER_MODEL: &str = "handler";

/// Why an agent card was refused. Every message names the offending field.
#[derive(Debug, thiserror::Error)]
pub enum CardError {
    /// The JSON form (from a data URI) is malformed or has wrong fields.
    #[error("invalid agent card JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The URI is not an inline JSON `data:` URI within the size limit.
    #[error("invalid agent card data URI: {0}")]
    DataUri(#[source] EnvelopeError),
    /// `id` is not a lowercase slug.
    #[error(
        "field `id`: {id:?} is not a valid id: {reason} \
         (use 1-{MAX_ID_LEN} characters of a-z, 0-9 and '-', e.g. \"summarizer-1\")"
    )]
    InvalidId {
        /// The id as written.
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A required text field is empty or only whitespace.
    #[error("field `{field}` must not be empty")]
    EmptyField {
        /// The field name.
        field: &'static str,
    },
    /// `capabilities` is an empty list.
    #[error("field `capabilities` must list at least one capability")]
    NoCapabilities,
    /// A capability name breaks the one rule ([`capability::check`]).
    #[error(
        "field `capabilities[{index}].name`: {name:?} must be 1-{} bytes \
         of a-z, 0-9 and '-' (e.g. \"extract-entities\")",
        capability::MAX_LEN
    )]
    InvalidCapabilityName {
        /// Position in the list.
        index: usize,
        /// The name as written.
        name: String,
        /// What the rule says is wrong.
        #[source]
        source: capability::CapabilityError,
    },
    /// The same capability appears twice.
    #[error("field `capabilities[{index}].name`: {name:?} is listed more than once")]
    DuplicateCapability {
        /// Position of the second occurrence.
        index: usize,
        /// The repeated name.
        name: String,
    },
    /// A capability is offered for free, which the escrow cannot settle.
    #[error("field `capabilities[{index}].price`: the price of {name:?} must be greater than zero")]
    ZeroPrice {
        /// Position in the list.
        index: usize,
        /// The capability name.
        name: String,
    },
    /// A capability's descriptor breaks a bound ([`crate::describe`]).
    #[error("field {source}")]
    InvalidDescriptor {
        /// Position in the list.
        index: usize,
        /// What is wrong.
        #[source]
        source: DescribeError,
    },
    /// More capabilities than [`MAX_CAPABILITIES`].
    #[error("field `capabilities`: a card offers at most {MAX_CAPABILITIES} capabilities")]
    TooManyCapabilities,
    /// The `handler` is malformed, or named beside a model.
    #[error("field `handler`: {reason}")]
    InvalidHandler {
        /// What is wrong.
        reason: String,
    },
    /// A delegated capability's name breaks the one rule, repeats, or the
    /// list is longer than [`MAX_DELEGATES`].
    #[error("field `delegates[{index}]`: {reason}")]
    InvalidDelegate {
        /// Position in the list.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// The cap on delegated spend outstanding is zero, or below a
    /// delegate's `max_price` (no child task of it could ever be funded).
    #[error("field `max_delegated_outstanding`: {reason}")]
    InvalidDelegatedCap {
        /// What is wrong.
        reason: String,
    },
}

/// The most capabilities one card may delegate.
pub const MAX_DELEGATES: usize = 8;

/// A capability the agent hands to another agent, as a tool it uses
/// (seed 002's sub-agents): the agent creates the child task itself, pays
/// for it from its own wallet, and waits for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delegate {
    /// The capability delegated, e.g. `translate`.
    pub capability: String,
    /// The most the agent pays for one child task (the spending limit per task).
    pub max_price: Price,
}

/// What an agent does in a Tessera market.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Accepts tasks and runs capabilities on them.
    Executor,
    /// Judges disputed deliveries.
    Arbiter,
    /// Splits a brief into tasks and routes them to executors.
    Orchestrator,
    /// Posts tasks and pays for them.
    Requester,
}

/// A capability's price: a [`Usdc`] amount with the card's notation.
///
/// In a card a price is written either as an **integer**, read as base units
/// (`price: 250000`), or as a **quoted decimal string**, read as whole USDC
/// with at most six decimals ([`Usdc::parse`]: `price: "0.25"`,
/// `price: "3"`). Both examples are the same price. A bare float
/// (`price: 0.25`) is refused because binary floats cannot represent every
/// USDC amount exactly. It serializes as the integer number of base units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Price(Usdc);

impl Price {
    /// A price of `units` USDC base units.
    pub const fn from_base_units(units: u128) -> Self {
        Self(Usdc::from_base_units(units))
    }

    /// The price in USDC base units.
    pub const fn base_units(self) -> u128 {
        self.0.base_units()
    }

    /// The price as an amount.
    pub const fn usdc(self) -> Usdc {
        self.0
    }

    /// Parses a decimal USDC amount such as `"0.25"` or `"12"`.
    pub fn parse_usdc(text: &str) -> Result<Self, UsdcError> {
        Usdc::parse(text).map(Self)
    }
}

impl From<Usdc> for Price {
    fn from(amount: Usdc) -> Self {
        Self(amount)
    }
}

impl fmt::Display for Price {
    /// As every amount is shown: `0.250000 USDC`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.with_unit())
    }
}

impl Serialize for Price {
    /// The integer number of base units.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match u64::try_from(self.base_units()) {
            Ok(units) => serializer.serialize_u64(units),
            Err(_) => serializer.serialize_u128(self.base_units()),
        }
    }
}

impl<'de> Deserialize<'de> for Price {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PriceVisitor;

        impl de::Visitor<'_> for PriceVisitor {
            type Value = Price;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an integer number of USDC base units (250000) or a quoted decimal USDC \
                     amount (\"0.25\")",
                )
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Price, E> {
                Ok(Price::from_base_units(u128::from(v)))
            }

            fn visit_u128<E: de::Error>(self, v: u128) -> Result<Price, E> {
                Ok(Price::from_base_units(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Price, E> {
                u128::try_from(v)
                    .map(Price::from_base_units)
                    .map_err(|_| E::custom(format!("price {v} is negative")))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Price, E> {
                Err(E::custom(format!(
                    "price {v} is a bare decimal; quote it (\"{v}\") to mean USDC, \
                     or give an integer number of base units"
                )))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Price, E> {
                Price::parse_usdc(v).map_err(E::custom)
            }
        }

        deserializer.deserialize_any(PriceVisitor)
    }
}

/// One capability the agent offers, with its price per task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityOffer {
    /// Capability name, 1-31 bytes of `[a-z0-9-]`, e.g. `extract-entities`.
    pub name: String,
    /// Price per task (see [`Price`] for the accepted notations).
    pub price: Price,
    /// One line: what it does ([`crate::describe`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What a task's spec should say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// What inputs it works on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
    /// The JSON Schema of its result (the bounded subset of
    /// [`crate::describe::ResultSchema`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ResultSchema>,
    /// A few ways a brief might ask for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phrasings: Vec<String>,
}

impl CapabilityOffer {
    /// An offer of `name` at `price`, described by nothing.
    pub fn new(name: impl Into<String>, price: Price) -> Self {
        Self {
            name: name.into(),
            price,
            description: None,
            spec: None,
            inputs: None,
            result: None,
            phrasings: Vec::new(),
        }
    }

    /// What the offer says of its capability, as written in the card.
    pub fn described(&self) -> Describe {
        Describe {
            description: self.description.clone(),
            spec: self.spec.clone(),
            inputs: self.inputs.clone(),
            result: self.result.clone(),
            phrasings: self.phrasings.clone(),
        }
    }

    /// The descriptor that holds for this capability: a built-in
    /// capability's own ([`crate::describe::builtin`]), whatever the card
    /// says; otherwise the card's.
    pub fn descriptor(&self) -> Describe {
        crate::describe::builtin(&self.name).unwrap_or_else(|| self.described())
    }
}

/// Most capabilities one card offers.
pub const MAX_CAPABILITIES: usize = 32;

/// Longest handler timeout a card may ask for, seconds.
pub const MAX_HANDLER_TIMEOUT_SECS: u64 = 3600;
/// Handler timeout when the card names none, seconds (the task's deadline
/// may cut it shorter).
pub const DEFAULT_HANDLER_TIMEOUT_SECS: u64 = 120;
/// Most arguments in a `command` handler.
pub const MAX_COMMAND_ARGS: usize = 32;

/// The operator's own code that does a worker's work, instead of a model:
/// the worker posts each task to it (`http`) or runs it with the task on
/// stdin (`command`) and takes back a result, a decline or a request to
/// hire sub-agents (the wire format is `docs/handler.schema.json`). It
/// stays on the operator's machine: [`AgentCard::published`] leaves it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handler {
    /// `POST` each task to this `http://` or `https://` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    /// Run this program (and arguments), one process per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The longest one call may take, seconds (default
    /// [`DEFAULT_HANDLER_TIMEOUT_SECS`]); never past the task's deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

impl Handler {
    fn validate(&self) -> Result<(), CardError> {
        let bad = |reason: String| Err(CardError::InvalidHandler { reason });
        match (&self.http, &self.command) {
            (Some(_), Some(_)) | (None, None) => {
                return bad("name exactly one of `http` and `command`".into());
            }
            (Some(url), None) => {
                let lower = url.to_ascii_lowercase();
                if !(lower.starts_with("http://") || lower.starts_with("https://"))
                    || url.len() <= "http://".len()
                    || url.chars().any(char::is_whitespace)
                {
                    return bad(format!("`http` {url:?} is not an http:// or https:// URL"));
                }
            }
            (None, Some(cmd)) => {
                if cmd.is_empty() || cmd[0].trim().is_empty() {
                    return bad("`command` names the program to run first".into());
                }
                if cmd.len() > MAX_COMMAND_ARGS {
                    return bad(format!("`command` has at most {MAX_COMMAND_ARGS} arguments"));
                }
            }
        }
        if let Some(t) = self.timeout_secs
            && (t == 0 || t > MAX_HANDLER_TIMEOUT_SECS)
        {
            return bad(format!("`timeout_secs` must be 1-{MAX_HANDLER_TIMEOUT_SECS}"));
        }
        Ok(())
    }

    /// The longest one call may take.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_secs.unwrap_or(DEFAULT_HANDLER_TIMEOUT_SECS))
    }
}

/// An agent card. [`AgentCard::validate`] checks every rule; the readers
/// ([`AgentCard::from_uri`], and the YAML loader in `tessera-workers`)
/// refuse invalid cards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentCard {
    /// Lowercase slug identifying the agent, e.g. `summarizer-1`.
    pub id: String,
    /// One-line human description.
    pub description: String,
    /// What the agent does in the market.
    pub role: Role,
    /// Capabilities offered, each with a price; names are unique.
    pub capabilities: Vec<CapabilityOffer>,
    /// Model backing the agent: [`OFFLINE_MODEL`] for the built-in
    /// deterministic runner, or a provider model name such as `gpt-4o-mini`.
    /// Empty (or [`HANDLER_MODEL`]) when a `handler` does the work.
    #[serde(default)]
    pub model: String,
    /// Standing instructions (system prompt) for the agent. Kept off chain:
    /// the published card ([`AgentCard::published`]) leaves them out unless
    /// `publish_instructions` is set, so a card read from the registry may
    /// have none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instructions: String,
    /// Whether the registry's copy of the card carries `instructions`;
    /// `false` by default (the prompt is the operator's own).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub publish_instructions: bool,
    /// Capabilities it delegates to other agents, each with its spending
    /// limit per task; none by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delegates: Vec<Delegate>,
    /// The most the agent has out in child tasks at once: the sum of the
    /// amounts of the child tasks it funded that are not settled yet. A
    /// task whose child would go over it is declined until a child settles.
    /// By default the sum of the `delegates`' `max_price`s: one child of
    /// each delegated capability at a time
    /// ([`AgentCard::delegated_outstanding_cap`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delegated_outstanding: Option<Price>,
    /// The operator's own code doing the work instead of a model (never
    /// published: see [`Handler`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<Handler>,
}

impl AgentCard {
    /// Whether this card runs on the built-in offline runner.
    pub fn is_offline(&self) -> bool {
        self.model == OFFLINE_MODEL && self.handler.is_none()
    }

    /// Whether the operator's own code does the work.
    pub fn uses_handler(&self) -> bool {
        self.handler.is_some()
    }

    /// The offer for capability `name`, if the card lists it.
    pub fn capability(&self, name: &str) -> Option<&CapabilityOffer> {
        self.capabilities.iter().find(|c| c.name == name)
    }

    /// The spending limit for delegating capability `name`, if the card
    /// delegates it.
    pub fn delegate(&self, name: &str) -> Option<&Delegate> {
        self.delegates.iter().find(|d| d.capability == name)
    }

    /// The most the agent may have out in unsettled child tasks at once,
    /// base units: `max_delegated_outstanding`, or by default the sum of the
    /// `delegates`' `max_price`s (zero for a card that delegates nothing).
    pub fn delegated_outstanding_cap(&self) -> u128 {
        match self.max_delegated_outstanding {
            Some(cap) => cap.base_units(),
            None => self
                .delegates
                .iter()
                .fold(0u128, |sum, d| sum.saturating_add(d.max_price.base_units())),
        }
    }

    /// Checks every rule a card as written must satisfy (its `instructions`
    /// included); the first violation is returned.
    pub fn validate(&self) -> Result<(), CardError> {
        match &self.handler {
            Some(handler) => {
                handler.validate()?;
                if !self.model.is_empty() && self.model != HANDLER_MODEL {
                    return Err(CardError::InvalidHandler {
                        reason: format!(
                            "a card names a model or a handler, not both (model {:?})",
                            self.model
                        ),
                    });
                }
                self.published().validate_published()
            }
            None => {
                if self.instructions.trim().is_empty() {
                    return Err(CardError::EmptyField { field: "instructions" });
                }
                self.validate_published()
            }
        }
    }

    /// Checks the rules of a published card: those of [`Self::validate`]
    /// but `instructions`, which the registry's copy carries only when the
    /// card asks ([`Self::published`]).
    pub fn validate_published(&self) -> Result<(), CardError> {
        validate_id(&self.id)?;
        for (field, value) in [("description", &self.description), ("model", &self.model)] {
            if value.trim().is_empty() {
                return Err(CardError::EmptyField { field });
            }
        }
        if self.capabilities.is_empty() {
            return Err(CardError::NoCapabilities);
        }
        if self.capabilities.len() > MAX_CAPABILITIES {
            return Err(CardError::TooManyCapabilities);
        }
        let mut seen = HashSet::new();
        for (index, offer) in self.capabilities.iter().enumerate() {
            let name = &offer.name;
            if let Err(source) = capability::check(name) {
                return Err(CardError::InvalidCapabilityName { index, name: name.clone(), source });
            }
            if !seen.insert(name.as_str()) {
                return Err(CardError::DuplicateCapability { index, name: name.clone() });
            }
            if offer.price.base_units() == 0 {
                return Err(CardError::ZeroPrice { index, name: name.clone() });
            }
            offer
                .described()
                .check(&format!("capabilities[{index}]"))
                .map_err(|source| CardError::InvalidDescriptor { index, source })?;
        }
        let mut delegated = HashSet::new();
        for (index, d) in self.delegates.iter().enumerate() {
            let bad = |reason: String| Err(CardError::InvalidDelegate { index, reason });
            if index >= MAX_DELEGATES {
                return bad(format!("a card delegates at most {MAX_DELEGATES} capabilities"));
            }
            if let Err(e) = capability::check(&d.capability) {
                return bad(format!("capability {:?}: {e}", d.capability));
            }
            if !delegated.insert(d.capability.as_str()) {
                return bad(format!("{:?} is listed more than once", d.capability));
            }
            if d.max_price.base_units() == 0 {
                return bad(format!(
                    "the max_price of {:?} must be greater than zero",
                    d.capability
                ));
            }
        }
        if let Some(cap) = self.max_delegated_outstanding {
            let bad = |reason: String| Err(CardError::InvalidDelegatedCap { reason });
            if cap.base_units() == 0 {
                return bad("must be greater than zero".into());
            }
            if let Some(d) = self.delegates.iter().find(|d| d.max_price > cap) {
                return bad(format!(
                    "{cap} is below the max_price of {:?} ({}): no child task of it could be \
                     funded",
                    d.capability, d.max_price
                ));
            }
        }
        Ok(())
    }

    /// What the registry publishes of the card, for anyone to read: every
    /// field — id, description, role, model, capabilities with prices,
    /// delegates and their limits — but `instructions`, left out unless
    /// `publish_instructions` is set.
    pub fn published(&self) -> Self {
        let mut card = self.clone();
        if !card.publish_instructions {
            card.instructions.clear();
        }
        if card.handler.take().is_some() {
            card.model = HANDLER_MODEL.to_owned();
        }
        card
    }

    /// The published card ([`Self::published`]) as JSON in a
    /// percent-encoded `data:application/json,` URI ([`percent_data_uri`]):
    /// what the registry's metadata URI holds. Prices appear as integer
    /// base units.
    pub fn to_uri(&self) -> String {
        // Plain strings, enums and integers always serialize.
        let json = serde_json::to_vec(&self.published()).unwrap_or_default();
        percent_data_uri(&json)
    }

    /// Parses and validates a published card ([`Self::validate_published`])
    /// from an inline JSON `data:` URI (percent-encoded as [`Self::to_uri`]
    /// writes it, raw JSON, or base64), at most [`MAX_CARD_BYTES`].
    pub fn from_uri(uri: &str) -> Result<Self, CardError> {
        let codec = EnvelopeCodec { inline_limit: MAX_CARD_BYTES, max_bytes: MAX_CARD_BYTES };
        let json = codec.fetch_inline(uri).map_err(CardError::DataUri)?;
        let card: Self = serde_json::from_slice(&json)?;
        card.validate_published()?;
        Ok(card)
    }
}

fn validate_id(id: &str) -> Result<(), CardError> {
    let reason = if id.is_empty() {
        Some("it is empty")
    } else if id.len() > MAX_ID_LEN {
        Some("it is too long")
    } else if !id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        Some("it has characters other than a-z, 0-9 and '-'")
    } else if id.starts_with('-') || id.ends_with('-') {
        Some("it starts or ends with '-'")
    } else if id.contains("--") {
        Some("it contains \"--\"")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(CardError::InvalidId { id: id.to_owned(), reason }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn delegates_are_checked_and_travel_in_the_uri() {
        let mut c = card();
        assert!(!c.to_uri().contains("delegates"), "none by default, none written");
        let d = |cap: &str, price: u128| Delegate {
            capability: cap.into(),
            max_price: Price::from_base_units(price),
        };
        c.delegates = vec![d("translate", 1_000_000)];
        let back = AgentCard::from_uri(&c.to_uri()).unwrap();
        assert_eq!(back.delegate("translate").unwrap().max_price.base_units(), 1_000_000);
        assert!(back.delegate("summarize").is_none());
        for (bad, needle) in [
            (vec![d("translate", 1), d("translate", 2)], "more than once"),
            (vec![d("Translate!", 1)], "delegates[0]"),
            (vec![d("translate", 0)], "greater than zero"),
            ((0..9).map(|i| d(&format!("cap-{i}"), 1)).collect(), "at most 8"),
        ] {
            c.delegates = bad;
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains("field `delegates["), "{e}");
        }
    }

    #[test]
    fn the_delegated_spend_cap_defaults_to_one_child_of_each_and_is_checked() {
        let mut c = card();
        assert_eq!(c.delegated_outstanding_cap(), 0, "delegates nothing, may spend nothing");
        let d = |cap: &str, price: u128| Delegate {
            capability: cap.into(),
            max_price: Price::from_base_units(price),
        };
        c.delegates = vec![d("translate", 1_000_000), d("summarize", 300_000)];
        assert_eq!(c.delegated_outstanding_cap(), 1_300_000, "one child of each at a time");
        assert!(!c.to_uri().contains("max_delegated_outstanding"), "none set, none written");
        c.max_delegated_outstanding = Some(Price::from_base_units(5_000_000));
        assert_eq!(c.delegated_outstanding_cap(), 5_000_000);
        let back = AgentCard::from_uri(&c.to_uri()).unwrap();
        assert_eq!(back.max_delegated_outstanding, Some(Price::from_base_units(5_000_000)));
        for (cap, needle) in [(0, "greater than zero"), (999_999, "below the max_price of")] {
            c.max_delegated_outstanding = Some(Price::from_base_units(cap));
            let e = c.validate().unwrap_err().to_string();
            assert!(
                e.starts_with("field `max_delegated_outstanding`") && e.contains(needle),
                "{e}"
            );
        }
    }

    #[test]
    fn a_handler_card_needs_no_model_and_never_publishes_its_handler() {
        let mut c = card();
        c.model = String::new();
        c.instructions.clear();
        c.handler = Some(Handler {
            http: Some("http://127.0.0.1:8700/task".into()),
            command: None,
            timeout_secs: Some(5),
        });
        c.validate().unwrap();
        let uri = c.to_uri();
        assert!(!uri.contains("8700"), "the handler stays with the operator");
        let back = AgentCard::from_uri(&uri).unwrap();
        assert_eq!((back.model.as_str(), back.handler.is_none()), (HANDLER_MODEL, true));
        for (handler, needle) in [
            (Handler { http: None, command: None, timeout_secs: None }, "exactly one"),
            (
                Handler { http: Some("ftp://x".into()), command: None, timeout_secs: None },
                "not an http",
            ),
            (Handler { http: None, command: Some(vec![]), timeout_secs: None }, "program"),
            (
                Handler { http: None, command: Some(vec!["node".into()]), timeout_secs: Some(0) },
                "timeout_secs",
            ),
        ] {
            c.handler = Some(handler);
            let e = c.validate().unwrap_err().to_string();
            assert!(e.starts_with("field `handler`") && e.contains(needle), "{e}");
        }
        c.handler =
            Some(Handler { http: None, command: Some(vec!["node".into()]), timeout_secs: None });
        c.model = "gpt-4o-mini".into();
        assert!(c.validate().unwrap_err().to_string().contains("not both"));
    }

    #[test]
    fn descriptors_travel_with_the_card_and_are_bounded() {
        let mut c = card();
        c.capabilities[0].name = "haiku-write".into();
        c.capabilities[0].description = Some("Writes a haiku.".into());
        c.capabilities[0].phrasings = vec!["write a haiku about autumn".into()];
        c.capabilities[0].result = Some(
            crate::describe::ResultSchema::from_json(&json!({
                "type": "object",
                "properties": {"haiku": {"type": "string"}},
                "required": ["haiku"]
            }))
            .unwrap(),
        );
        let back = AgentCard::from_uri(&c.to_uri()).unwrap();
        assert_eq!(back.capabilities[0], c.capabilities[0]);
        assert_eq!(
            back.capabilities[0].descriptor().description.as_deref(),
            Some("Writes a haiku.")
        );
        // A built-in's descriptor is its own, whatever the card says.
        c.capabilities[1].description = Some("Anything at all.".into());
        assert_ne!(c.capabilities[1].descriptor().description.as_deref(), Some("Anything at all."));
        c.capabilities[0].phrasings = vec!["p".into(); 7];
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("capabilities[0].phrasings"), "{e}");
        // A hostile schema in a published card is refused when read back.
        c.capabilities[0].phrasings.clear();
        let uri = c.to_uri();
        let hostile = uri.replace("%22type%22%3A%22string%22", "%22type%22%3A%22blob%22");
        assert_ne!(hostile, uri);
        let e = AgentCard::from_uri(&hostile).unwrap_err().to_string();
        assert!(e.contains("\"blob\" is not one of"), "{e}");
        c.capabilities = (0..33)
            .map(|i| CapabilityOffer::new(format!("cap-{i}"), Price::from_base_units(1)))
            .collect();
        assert!(c.validate().unwrap_err().to_string().contains("at most 32"));
    }

    fn card() -> AgentCard {
        AgentCard {
            id: "summarizer-1".into(),
            description: "Résumés — 要約, 50% faster".into(),
            role: Role::Executor,
            capabilities: vec![
                CapabilityOffer::new("summarize", Price::from_base_units(250_000)),
                CapabilityOffer::new("extract-entities", Price::from_base_units(100_000)),
            ],
            model: OFFLINE_MODEL.into(),
            instructions: "Summarize the material.".into(),
            publish_instructions: false,
            delegates: Vec::new(),
            max_delegated_outstanding: None,
            handler: None,
        }
    }

    #[test]
    fn uri_is_percent_encoded_json_that_round_trips() {
        let uri = card().to_uri();
        assert!(uri.starts_with("data:application/json,%7B%22id%22%3A%22summarizer-1%22"), "{uri}");
        let body = uri.strip_prefix("data:application/json,").unwrap();
        assert!(!body.contains([' ', '"', '{', '}', ',', ':', '\n']), "{body}");
        assert_eq!(AgentCard::from_uri(&uri).unwrap(), card().published());
    }

    #[test]
    fn instructions_stay_off_chain_unless_the_card_asks() {
        let uri = card().to_uri();
        assert!(!uri.contains("instructions") && !uri.contains("Summarize%20the"), "{uri}");
        let read = AgentCard::from_uri(&uri).unwrap();
        assert_eq!((read.instructions.as_str(), read.publish_instructions), ("", false));
        assert_eq!(read.capabilities, card().capabilities, "prices are published");
        assert!(read.validate().is_err(), "a card without instructions cannot be run");
        let mut open = card();
        open.publish_instructions = true;
        let read = AgentCard::from_uri(&open.to_uri()).unwrap();
        assert_eq!(read, open, "published whole when asked");
    }

    #[test]
    fn reads_raw_and_base64_json_uris() {
        let json = serde_json::to_string(&card()).unwrap();
        let value: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["capabilities"][0]["price"], 250_000);
        assert_eq!(value["role"], "executor");
        assert!(value.get("publish_instructions").is_none(), "false, not written");
        let raw = format!("data:application/json,{}", json.replace('%', "%25"));
        assert_eq!(AgentCard::from_uri(&raw).unwrap(), card());
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&json);
        let b64 = format!("data:application/json;base64,{b64}");
        assert_eq!(AgentCard::from_uri(&b64).unwrap(), card());
    }

    #[test]
    fn hostile_uris_are_refused() {
        for (uri, why) in [
            ("data:text/plain,hi", "invalid agent card data URI"),
            ("data:application/json,%zz", "invalid agent card data URI"),
            ("ipfs://Qm", "invalid agent card data URI"),
            ("data:application/json,{\"id\":\"a\"}", "invalid agent card JSON"),
        ] {
            let e = AgentCard::from_uri(uri).unwrap_err().to_string();
            assert!(e.contains(why), "{uri}: {e}");
        }
        let huge = format!("data:application/json,{}", "x".repeat(4 * MAX_CARD_BYTES));
        assert!(matches!(
            AgentCard::from_uri(&huge),
            Err(CardError::DataUri(EnvelopeError::TooLarge { .. }))
        ));
        let mut bad = card();
        bad.capabilities[0].name = "Summarize".into();
        let e = AgentCard::from_uri(&bad.to_uri()).unwrap_err();
        assert!(matches!(
            e,
            CardError::InvalidCapabilityName {
                index: 0,
                source: capability::CapabilityError::InvalidCharacter(_),
                ..
            }
        ));
        assert!(e.to_string().contains("1-31"), "{e}");
    }

    #[test]
    fn price_notations() {
        let p = |v: Value| serde_json::from_value::<Price>(v).map(Price::base_units);
        assert_eq!(p(json!(250_000)).unwrap(), 250_000);
        assert_eq!(p(json!("0.25")).unwrap(), 250_000);
        assert_eq!(p(json!("3 USDC")).unwrap(), 3_000_000);
        assert!(p(json!(0.25)).unwrap_err().to_string().contains("quote it"));
        assert!(p(json!(-5)).unwrap_err().to_string().contains("negative"));
        assert!(p(json!("0.0000001")).unwrap_err().to_string().contains("more than 6 decimals"));
        assert_eq!(serde_json::to_value(Price::from_base_units(7)).unwrap(), json!(7));
        assert_eq!(Price::from_base_units(250_000).to_string(), "0.250000 USDC");
        assert_eq!(Price::from(Usdc::from_whole(2)).usdc(), Usdc::from_whole(2));
    }

    #[test]
    fn refuses_bad_ids() {
        for id in ["Summarizer", "sum_1", "-sum", "a--b", "", &"a".repeat(65)] {
            let mut c = card();
            c.id = id.into();
            assert!(matches!(c.validate(), Err(CardError::InvalidId { .. })), "{id:?}");
        }
    }
}
