//! The declarative agent card: who a worker is and what it sells.
//!
//! A card is a small YAML file:
//!
//! ```yaml
//! id: summarizer-1
//! description: Extractive summaries of briefs and reports.
//! role: executor
//! model: offline
//! capabilities:
//!   - name: summarize
//!     price: "0.25"     # 0.25 USDC
//!   - name: extract-entities
//!     price: 100000     # 100000 base units = 0.1 USDC
//! instructions: |
//!   Summarize the material in the number of bullets the spec asks for.
//! ```
//!
//! Cards are validated when loaded, so a worker never starts with a card the
//! registry or the offline runner would reject. [`AgentCard::to_data_uri`]
//! gives the JSON form published as the agent's registry URI.

use std::{collections::HashSet, fmt, path::Path};

use serde::{Deserialize, Deserializer, Serialize, de};

use crate::offline::OFFLINE_CAPABILITIES;

/// Longest capability name, in bytes. Capability names are stored on chain as
/// short strings, which Solidity packs into one 32-byte word up to 31 bytes.
pub const MAX_CAPABILITY_NAME_LEN: usize = 31;

/// Longest agent id, in bytes.
pub const MAX_ID_LEN: usize = 64;

/// Decimals of USDC: one USDC is `10^6` base units.
pub const USDC_DECIMALS: u32 = 6;

/// The `model` value that selects the built-in deterministic runner.
pub const OFFLINE_MODEL: &str = "offline";

/// Why an agent card was refused. Every message names the offending field.
#[derive(Debug, thiserror::Error)]
pub enum CardError {
    /// The card file could not be read.
    #[error("cannot read agent card {path}: {source}")]
    Io {
        /// The path that was tried.
        path: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The YAML is malformed, has an unknown or missing field, or a value of
    /// the wrong type (the message includes the field path).
    #[error("invalid agent card: {0}")]
    Yaml(#[from] serde_yaml::Error),
    /// The JSON form (from a data URI) is malformed or has wrong fields.
    #[error("invalid agent card JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A data URI did not have the expected shape.
    #[error("invalid agent card data URI: {0}")]
    DataUri(String),
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
    /// A capability name is not 1-31 bytes of `[a-z0-9-]`.
    #[error(
        "field `capabilities[{index}].name`: {name:?} must be 1-{MAX_CAPABILITY_NAME_LEN} bytes \
         of a-z, 0-9 and '-' (e.g. \"extract-entities\")"
    )]
    InvalidCapabilityName {
        /// Position in the list.
        index: usize,
        /// The name as written.
        name: String,
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
    /// The card uses `model: offline` but lists a capability the offline
    /// runner does not implement.
    #[error(
        "field `capabilities[{index}].name`: {name:?} is not implemented by the offline runner \
         (model \"offline\" supports: {known}); choose one of those or another model"
    )]
    UnknownOfflineCapability {
        /// Position in the list.
        index: usize,
        /// The capability name.
        name: String,
        /// The supported names, comma-separated.
        known: String,
    },
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

/// A price in USDC base units (`1 USDC = 1_000_000`).
///
/// In YAML a price is written either as an **integer**, read as base units
/// (`price: 250000`), or as a **quoted decimal string**, read as whole USDC
/// with at most six decimals (`price: "0.25"`, `price: "3"`). Both examples
/// above are the same price. A bare YAML float (`price: 0.25`) is refused
/// because binary floats cannot represent every USDC amount exactly.
/// It serializes as the integer number of base units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Price(u64);

impl Price {
    /// A price of `units` USDC base units.
    pub const fn from_base_units(units: u64) -> Self {
        Self(units)
    }

    /// The price in USDC base units.
    pub const fn base_units(self) -> u64 {
        self.0
    }

    /// Parses a decimal USDC amount such as `"0.25"` or `"12"`.
    pub fn parse_usdc(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let text = text.strip_suffix("USDC").map_or(text, str::trim_end);
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() && frac.is_empty() || !digits(whole) || !digits(frac) {
            return Err(format!(
                "{text:?} is not a USDC amount; write a decimal like \"0.25\" \
                 or an integer number of base units like 250000"
            ));
        }
        if frac.len() > USDC_DECIMALS as usize {
            return Err(format!(
                "{text:?} has more than {USDC_DECIMALS} decimals, finer than one USDC base unit"
            ));
        }
        let scale = 10u64.pow(USDC_DECIMALS);
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| format!("{text:?} is too large"))?
        };
        let frac_units: u64 = if frac.is_empty() {
            0
        } else {
            let padded = format!("{frac:0<6}");
            padded.parse().map_err(|_| format!("{text:?} is not a USDC amount"))?
        };
        whole
            .checked_mul(scale)
            .and_then(|w| w.checked_add(frac_units))
            .map(Self)
            .ok_or_else(|| format!("{text:?} is too large"))
    }
}

impl fmt::Display for Price {
    /// Formats as a decimal USDC amount, e.g. `0.25 USDC`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scale = 10u64.pow(USDC_DECIMALS);
        let (whole, frac) = (self.0 / scale, self.0 % scale);
        if frac == 0 {
            write!(f, "{whole} USDC")
        } else {
            let frac = format!("{frac:06}");
            write!(f, "{whole}.{} USDC", frac.trim_end_matches('0'))
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
                Ok(Price(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Price, E> {
                u64::try_from(v).map(Price).map_err(|_| E::custom(format!("price {v} is negative")))
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
}

/// A validated agent card. Build one with [`AgentCard::from_yaml`] or
/// [`AgentCard::load`]; both refuse invalid cards.
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
    /// Model backing the agent: `offline` for the built-in deterministic
    /// runner, or a provider model name such as `gpt-4o-mini`.
    pub model: String,
    /// Standing instructions (system prompt) for the agent.
    pub instructions: String,
}

impl AgentCard {
    /// Parses and validates a card from YAML text.
    pub fn from_yaml(yaml: &str) -> Result<Self, CardError> {
        let card: Self = serde_yaml::from_str(yaml)?;
        card.validate()?;
        Ok(card)
    }

    /// Reads, parses and validates a card file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, CardError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|source| CardError::Io { path: path.display().to_string(), source })?;
        Self::from_yaml(&text)
    }

    /// Whether this card runs on the built-in offline runner.
    pub fn is_offline(&self) -> bool {
        self.model == OFFLINE_MODEL
    }

    /// The offer for capability `name`, if the card lists it.
    pub fn capability(&self, name: &str) -> Option<&CapabilityOffer> {
        self.capabilities.iter().find(|c| c.name == name)
    }

    /// Checks every rule a card must satisfy; the first violation is returned.
    pub fn validate(&self) -> Result<(), CardError> {
        validate_id(&self.id)?;
        for (field, value) in [
            ("description", &self.description),
            ("model", &self.model),
            ("instructions", &self.instructions),
        ] {
            if value.trim().is_empty() {
                return Err(CardError::EmptyField { field });
            }
        }
        if self.capabilities.is_empty() {
            return Err(CardError::NoCapabilities);
        }
        let mut seen = HashSet::new();
        for (index, offer) in self.capabilities.iter().enumerate() {
            let name = &offer.name;
            if !is_capability_name(name) {
                return Err(CardError::InvalidCapabilityName { index, name: name.clone() });
            }
            if !seen.insert(name.as_str()) {
                return Err(CardError::DuplicateCapability { index, name: name.clone() });
            }
            if offer.price.base_units() == 0 {
                return Err(CardError::ZeroPrice { index, name: name.clone() });
            }
            if self.is_offline() && !OFFLINE_CAPABILITIES.contains(&name.as_str()) {
                return Err(CardError::UnknownOfflineCapability {
                    index,
                    name: name.clone(),
                    known: OFFLINE_CAPABILITIES.join(", "),
                });
            }
        }
        Ok(())
    }

    /// The card as agent-card JSON in a `data:application/json,` URI, with
    /// every byte outside the RFC 3986 unreserved set percent-encoded.
    /// Prices appear as integer base units.
    pub fn to_data_uri(&self) -> String {
        // Serializing plain strings, enums and integers cannot fail.
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("data:application/json,{}", percent_encode(&json))
    }

    /// Parses and validates a card from a URI made by [`AgentCard::to_data_uri`].
    pub fn from_data_uri(uri: &str) -> Result<Self, CardError> {
        let Some(encoded) = uri.strip_prefix("data:application/json,") else {
            return Err(CardError::DataUri(
                "expected it to start with \"data:application/json,\"".to_owned(),
            ));
        };
        let json = percent_decode(encoded).ok_or_else(|| {
            CardError::DataUri("bad percent-encoding or the JSON is not UTF-8".to_owned())
        })?;
        let card: Self = serde_json::from_str(&json)?;
        card.validate()?;
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

/// Whether `name` is a valid capability name: 1-31 bytes of `[a-z0-9-]`.
pub fn is_capability_name(name: &str) -> bool {
    (1..=MAX_CAPABILITY_NAME_LEN).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = r#"
id: summarizer-1
description: Extractive summaries.
role: executor
model: offline
capabilities:
  - name: summarize
    price: "0.25"
  - name: extract-entities
    price: 100000
instructions: Summarize the material.
"#;

    fn with(from: &str, to: &str) -> String {
        assert!(VALID.contains(from), "fixture lacks {from:?}");
        VALID.replacen(from, to, 1)
    }

    fn err(yaml: &str) -> String {
        AgentCard::from_yaml(yaml).expect_err("card should be refused").to_string()
    }

    #[test]
    fn parses_a_valid_card_with_both_price_notations() {
        let card = AgentCard::from_yaml(VALID).unwrap();
        assert_eq!(card.id, "summarizer-1");
        assert_eq!(card.role, Role::Executor);
        assert!(card.is_offline());
        assert_eq!(card.capability("summarize").unwrap().price.base_units(), 250_000);
        assert_eq!(card.capability("extract-entities").unwrap().price.base_units(), 100_000);
        assert!(card.capability("translate").is_none());
    }

    #[test]
    fn parses_usdc_decimal_strings() {
        let p = |s: &str| Price::parse_usdc(s).map(Price::base_units);
        assert_eq!(p("0.25"), Ok(250_000));
        assert_eq!(p("3"), Ok(3_000_000));
        assert_eq!(p("1.5 USDC"), Ok(1_500_000));
        assert_eq!(p(".000001"), Ok(1));
        assert!(p("0.0000001").unwrap_err().contains("more than 6 decimals"));
        assert!(p("abc").unwrap_err().contains("not a USDC amount"));
        assert!(p("").is_err());
        assert!(p("99999999999999999999").unwrap_err().contains("too large"));
        assert_eq!(Price::from_base_units(250_000).to_string(), "0.25 USDC");
        assert_eq!(Price::from_base_units(2_000_000).to_string(), "2 USDC");
    }

    #[test]
    fn refuses_bare_float_and_negative_prices() {
        let e = err(&with("price: \"0.25\"", "price: 0.25"));
        assert!(e.contains("capabilities[0].price") && e.contains("quote it"), "{e}");
        let e = err(&with("price: \"0.25\"", "price: -5"));
        assert!(e.contains("negative"), "{e}");
    }

    #[test]
    fn refuses_unknown_and_missing_fields() {
        let e = err(&format!("{VALID}temperature: 0.2\n"));
        assert!(e.contains("unknown field `temperature`"), "{e}");
        let e = err(&with("model: offline\n", ""));
        assert!(e.contains("missing field `model`"), "{e}");
        let e = err(&with("    price: 100000", "    price: 100000\n    currency: usdc"));
        assert!(e.contains("unknown field `currency`"), "{e}");
    }

    #[test]
    fn refuses_bad_role() {
        let e = err(&with("role: executor", "role: boss"));
        assert!(e.contains("role") && e.contains("executor"), "{e}");
    }

    #[test]
    fn refuses_bad_ids() {
        for (id, reason) in [
            ("Summarizer", "characters other than"),
            ("sum_1", "characters other than"),
            ("-sum", "starts or ends"),
            ("a--b", "\"--\""),
            ("\"\"", "empty"),
        ] {
            let e = err(&with("id: summarizer-1", &format!("id: {id}")));
            assert!(e.starts_with("field `id`") && e.contains(reason), "{id}: {e}");
        }
    }

    #[test]
    fn refuses_empty_text_fields() {
        let e = err(&with("description: Extractive summaries.", "description: \"  \""));
        assert_eq!(e, "field `description` must not be empty");
        let e = err(&with("instructions: Summarize the material.", "instructions: \"\""));
        assert_eq!(e, "field `instructions` must not be empty");
    }

    #[test]
    fn refuses_bad_capability_lists() {
        let no_caps = "id: a\ndescription: d\nrole: executor\nmodel: gpt-4o-mini\n\
                       capabilities: []\ninstructions: i\n";
        assert_eq!(err(no_caps), "field `capabilities` must list at least one capability");

        let e = err(&with("name: extract-entities", "name: summarize"));
        assert!(e.starts_with("field `capabilities[1].name`") && e.contains("more than once"));

        for bad in ["Summarize", "sum marize", "\"\"", "a-very-long-capability-name-over-31"] {
            let e = err(&with("name: summarize", &format!("name: {bad}")));
            assert!(e.starts_with("field `capabilities[0].name`") && e.contains("1-31"), "{e}");
        }

        let e = err(&with("price: 100000", "price: 0"));
        assert!(e.contains("capabilities[1].price") && e.contains("greater than zero"), "{e}");
        let e = err(&with("price: \"0.25\"", "price: \"0.0\""));
        assert!(e.contains("capabilities[0].price"), "{e}");
    }

    #[test]
    fn offline_model_only_accepts_offline_capabilities() {
        let yaml = with("name: extract-entities", "name: write-poetry");
        let e = err(&yaml);
        assert!(e.contains("\"write-poetry\" is not implemented by the offline runner"), "{e}");
        assert!(e.contains("summarize, translate, sentiment-classify, extract-entities"), "{e}");
        // Any capability is fine for a hosted model.
        let card = AgentCard::from_yaml(&yaml.replace("model: offline", "model: gpt-4o-mini"));
        assert_eq!(card.unwrap().capabilities[1].name, "write-poetry");
    }

    #[test]
    fn data_uri_is_percent_encoded_json_that_round_trips() {
        let card = AgentCard::from_yaml(VALID).unwrap();
        let uri = card.to_data_uri();
        assert!(uri.starts_with("data:application/json,%7B%22id%22%3A%22summarizer-1%22"), "{uri}");
        let body = uri.strip_prefix("data:application/json,").unwrap();
        assert!(!body.contains([' ', '"', '{', '}', ',', ':', '\n']), "{body}");
        let json: serde_json::Value = serde_json::from_str(&percent_decode(body).unwrap()).unwrap();
        assert_eq!(json["capabilities"][0]["price"], 250_000);
        assert_eq!(json["role"], "executor");
        assert_eq!(AgentCard::from_data_uri(&uri).unwrap(), card);
        assert!(AgentCard::from_data_uri("data:text/plain,hi").is_err());
        assert!(AgentCard::from_data_uri("data:application/json,%zz").is_err());
    }

    #[test]
    fn unicode_survives_the_data_uri() {
        let card = AgentCard::from_yaml(&with("Extractive summaries.", "Résumés — 要約")).unwrap();
        assert_eq!(AgentCard::from_data_uri(&card.to_data_uri()).unwrap(), card);
    }

    #[test]
    fn example_cards_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cards");
        let expected = [
            ("summarizer.yaml", "summarize"),
            ("translator.yaml", "translate"),
            ("sentiment.yaml", "sentiment-classify"),
            ("extractor.yaml", "extract-entities"),
        ];
        for (file, capability) in expected {
            let card = AgentCard::load(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(card.role, Role::Executor, "{file}");
            assert!(card.capability(capability).is_some(), "{file} lacks {capability}");
        }
        let e = AgentCard::load(dir.join("missing.yaml")).unwrap_err().to_string();
        assert!(e.starts_with("cannot read agent card") && e.contains("missing.yaml"), "{e}");
    }
}
