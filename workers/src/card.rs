//! The declarative agent card a worker is configured with: YAML loading and
//! the worker's own rule on top of the one card model.
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
//! A card may name a `handler` instead of a model: the operator's own code
//! does the work (any capability, described in the card so plans and
//! buyers know its result's shape), and needs no model nor instructions:
//!
//! ```yaml
//! id: haiku-1
//! description: Haiku on any subject, written by the operator's own service.
//! role: executor
//! capabilities:
//!   - name: haiku-write
//!     price: "0.25"
//!     description: A haiku on the subject the spec names.
//!     result:
//!       type: object
//!       properties:
//!         haiku: {type: string}
//!       required: [haiku]
//! handler:
//!   http: http://127.0.0.1:8088/task   # or: command: [python3, agent.py]
//!   timeout_secs: 30                   # default 120, never past the deadline
//! ```
//!
//! The handler stays on the operator's machine (the published card says
//! `model: handler`); the wire format it speaks is [`crate::brain::wire`]
//! (`docs/handler.schema.json`). A `command`'s relative paths are resolved
//! against the card file's directory, where it runs.
//!
//! The model, prices, validation and the registry URI encoding are
//! [`tessera_bindings::card`]'s; this module reads YAML and adds what only a
//! worker knows: `model: offline` runs only the capabilities the offline
//! runner implements. Cards are validated when loaded, so a worker never
//! starts with a card the registry or the offline runner would reject.
//! [`AgentCard::to_data_uri`] gives the URI published in the registry: the
//! card as JSON without its `instructions`, which stay off chain unless the
//! card sets `publish_instructions: true`
//! ([`tessera_bindings::card::AgentCard::published`]).

use std::{ops::Deref, path::Path};

use serde::{Deserialize, Serialize};
use tessera_bindings::card as model;
pub use tessera_bindings::card::{CapabilityOffer, MAX_ID_LEN, OFFLINE_MODEL, Price, Role};

use crate::offline::OFFLINE_CAPABILITIES;

/// Longest capability name, in bytes (the one rule lives in
/// [`tessera_bindings::capability`]).
pub const MAX_CAPABILITY_NAME_LEN: usize = tessera_bindings::capability::MAX_LEN;

/// Decimals of USDC: one USDC is `10^6` base units.
pub const USDC_DECIMALS: u32 = tessera_bindings::usdc::DECIMALS;

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
    /// The card breaks a rule of the card model.
    #[error(transparent)]
    Card(#[from] model::CardError),
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

/// A validated agent card, as a worker runs it: the card model
/// ([`tessera_bindings::card::AgentCard`], reached through `Deref`) checked
/// by the model's rules and the worker's. Build one with
/// [`AgentCard::from_yaml`] or [`AgentCard::load`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentCard(model::AgentCard);

impl Deref for AgentCard {
    type Target = model::AgentCard;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl AgentCard {
    /// A worker's card from the card model, checked by every rule.
    pub fn new(card: model::AgentCard) -> Result<Self, CardError> {
        let card = Self(card);
        card.validate()?;
        Ok(card)
    }

    /// Parses and validates a card from YAML text.
    pub fn from_yaml(yaml: &str) -> Result<Self, CardError> {
        Self::new(serde_yaml::from_str(yaml)?)
    }

    /// Reads, parses and validates a card file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, CardError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|source| CardError::Io { path: path.display().to_string(), source })?;
        Self::from_yaml(&text)
    }

    /// The card model.
    pub fn model(&self) -> &model::AgentCard {
        &self.0
    }

    /// The card model, by value.
    pub fn into_model(self) -> model::AgentCard {
        self.0
    }

    /// Checks every rule a card must satisfy; the first violation is returned.
    pub fn validate(&self) -> Result<(), CardError> {
        self.0.validate()?;
        self.check_offline()
    }

    /// `model: offline` runs only what the offline runner implements.
    fn check_offline(&self) -> Result<(), CardError> {
        if self.is_offline() {
            for (index, offer) in self.capabilities.iter().enumerate() {
                if !OFFLINE_CAPABILITIES.contains(&offer.name.as_str()) {
                    return Err(CardError::UnknownOfflineCapability {
                        index,
                        name: offer.name.clone(),
                        known: OFFLINE_CAPABILITIES.join(", "),
                    });
                }
            }
        }
        Ok(())
    }

    /// The card's registry URI ([`tessera_bindings::card::AgentCard::to_uri`]).
    pub fn to_data_uri(&self) -> String {
        self.0.to_uri()
    }

    /// Parses and validates a card from its registry URI: the published
    /// card, without `instructions` unless it asked to publish them.
    pub fn from_data_uri(uri: &str) -> Result<Self, CardError> {
        let card = Self(model::AgentCard::from_uri(uri)?);
        card.check_offline()?;
        Ok(card)
    }
}

/// Whether `name` is a valid capability name: 1-31 bytes of `[a-z0-9-]`
/// ([`tessera_bindings::capability::check`]).
pub fn is_capability_name(name: &str) -> bool {
    tessera_bindings::capability::is_valid(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_agents_cards_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/agents");
        let mut loaded = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let card = entry.unwrap().path().join("card.yaml");
            let card = AgentCard::load(&card).unwrap_or_else(|e| panic!("{}: {e}", card.display()));
            assert!(card.uses_handler(), "{}", card.id);
            for offer in &card.capabilities {
                assert!(offer.result.is_some() && offer.description.is_some(), "{}", offer.name);
            }
            loaded += 1;
        }
        assert!(loaded >= 2, "the Python and Node examples");
    }

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
        let p = |s: &str| Price::parse_usdc(s).map(Price::base_units).map_err(|e| e.to_string());
        assert_eq!(p("0.25"), Ok(250_000));
        assert_eq!(p("3"), Ok(3_000_000));
        assert_eq!(p("1.5 USDC"), Ok(1_500_000));
        assert_eq!(p(".000001"), Ok(1));
        assert!(p("0.0000001").unwrap_err().contains("more than 6 decimals"));
        assert!(p("abc").unwrap_err().contains("not a USDC amount"));
        assert!(p("").is_err());
        assert!(p(&"9".repeat(40)).unwrap_err().contains("does not fit"));
        assert_eq!(Price::from_base_units(250_000).to_string(), "0.250000 USDC");
        assert_eq!(Price::from_base_units(2_000_000).to_string(), "2.000000 USDC");
        let e = err(&with("price: \"0.25\"", "price: \"0.2500001\""));
        assert!(e.contains("capabilities[0].price") && e.contains("more than 6 decimals"), "{e}");
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
        // A card without a handler names its model.
        let e = err(&with("model: offline\n", ""));
        assert_eq!(e, "field `model` must not be empty");
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
    fn a_handler_card_needs_no_model_nor_instructions_and_offers_anything() {
        let yaml = "
id: haiku-1
description: Haiku by the operator's service.
role: executor
capabilities:
  - name: haiku-write
    price: \"0.25\"
    result:
      type: object
      properties:
        haiku: {type: string}
      required: [haiku]
handler:
  http: http://127.0.0.1:8088/task?key=s3cret
  timeout_secs: 30
";
        let card = AgentCard::from_yaml(yaml).unwrap();
        assert!(card.uses_handler() && !card.is_offline());
        assert_eq!(card.handler.as_ref().unwrap().timeout(), std::time::Duration::from_secs(30));
        let schema = card.capability("haiku-write").unwrap().descriptor().result.unwrap();
        assert!(schema.check(&serde_json::json!({"haiku": "x"})).is_ok());
        // Published without the handler (nor its URL), as a handler's card.
        let published = AgentCard::from_data_uri(&card.to_data_uri()).unwrap();
        assert_eq!((published.model.as_str(), published.handler.is_none()), ("handler", true));
        assert!(!card.to_data_uri().contains("s3cret"));
        let e = err(&yaml.replace("  timeout_secs: 30\n", "  command: [python3, agent.py]\n"));
        assert!(e.contains("field `handler`: name exactly one of `http` and `command`"), "{e}");
        let e = err(&format!("{yaml}model: gpt-test\n"));
        assert!(e.contains("a card names a model or a handler, not both"), "{e}");
        // The same capabilities on the offline runner are refused.
        let e = err(&yaml.replace(
            "handler:\n  http: http://127.0.0.1:8088/task?key=s3cret\n  timeout_secs: 30\n",
            "model: offline\ninstructions: i\n",
        ));
        assert!(e.contains("\"haiku-write\" is not implemented by the offline runner"), "{e}");
        // It needs no LLM key.
        assert!(crate::llm::LlmConfig::for_card(&card, None).unwrap().is_none());
    }

    #[test]
    fn data_uri_is_percent_encoded_json_that_round_trips() {
        let card = AgentCard::from_yaml(VALID).unwrap();
        let uri = card.to_data_uri();
        assert!(uri.starts_with("data:application/json,%7B%22id%22%3A%22summarizer-1%22"), "{uri}");
        let body = uri.strip_prefix("data:application/json,").unwrap();
        assert!(!body.contains([' ', '"', '{', '}', ',', ':', '\n']), "{body}");
        let json: serde_json::Value = serde_json::from_slice(
            &tessera_bindings::envelope::EnvelopeCodec::default().fetch_inline(&uri).unwrap(),
        )
        .unwrap();
        assert_eq!(json["capabilities"][0]["price"], 250_000);
        assert_eq!(json["role"], "executor");
        assert!(json.get("instructions").is_none(), "kept off chain: {json}");
        assert_eq!(*AgentCard::from_data_uri(&uri).unwrap(), card.published());
        assert!(AgentCard::from_data_uri("data:text/plain,hi").is_err());
        assert!(AgentCard::from_data_uri("data:application/json,%zz").is_err());
    }

    #[test]
    fn unicode_survives_the_data_uri() {
        let card = AgentCard::from_yaml(&with("Extractive summaries.", "Résumés — 要約"))
            .unwrap()
            .published();
        assert_eq!(*AgentCard::from_data_uri(&card.to_uri()).unwrap(), card);
    }

    #[test]
    fn example_cards_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cards");
        let expected = [
            ("summarizer-a.yaml", "extract-entities"),
            ("summarizer.yaml", "summarize"),
            ("llm-sentiment.yaml", "sentiment-classify"),
            ("translator.yaml", "translate"),
            ("sentiment.yaml", "sentiment-classify"),
            ("extractor.yaml", "extract-entities"),
        ];
        for (file, capability) in expected {
            let card = AgentCard::load(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(card.role, Role::Executor, "{file}");
            assert!(card.capability(capability).is_some(), "{file} lacks {capability}");
        }
        let brief = AgentCard::load(dir.join("brief.yaml")).unwrap();
        assert_eq!(brief.delegate("translate").unwrap().max_price.base_units(), 1_000_000);
        assert_eq!(brief.delegated_outstanding_cap(), 3_000_000, "three briefs at once");
        let e = AgentCard::load(dir.join("missing.yaml")).unwrap_err().to_string();
        assert!(e.starts_with("cannot read agent card") && e.contains("missing.yaml"), "{e}");
    }
}
