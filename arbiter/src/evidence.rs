//! The evidence of a dispute, read from chain events and verified blobs: the
//! spec envelope, the delivered result and the client's reason; on appeal
//! also the ruling appealed (its share and rationale) and the appellant's
//! reason. Anything that cannot be read is recorded as such (and counts
//! against whoever wrote it), never a crash.

use alloy::primitives::Address;
use serde::Serialize;
use serde_json::Value;
use tessera_bindings::{
    envelope::{BlobStore, EnvelopeCodec},
    task::TaskRecord,
};

/// What the judge sees.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The task id (decimal).
    pub task_id: String,
    /// The capability asked for, when the envelope names it.
    pub capability: Option<String>,
    /// The instruction.
    pub spec: String,
    /// The material: the envelope's source, else its inputs joined.
    pub material: String,
    /// The delivered result as JSON, when it could be read.
    pub result: Option<Value>,
    /// The client's reason for disputing.
    pub reason: String,
    /// Problems reading any of it (`envelope: …`, `result: …`, `reason: …`,
    /// on appeal `appeal reason: …`, `ruling rationale: …`).
    pub problems: Vec<String>,
    /// The appeal, when the judge decides one rather than a first dispute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub appeal: Option<AppealEvidence>,
}

/// Which party appealed a ruling (the escrow lets only these two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Appellant {
    /// The client, who disputed.
    Client,
    /// The executor, who delivered.
    Executor,
}

impl Appellant {
    /// The party `who` is on `rec`: the executor when it is the task's
    /// executor, the client otherwise.
    pub fn of(who: Address, rec: &TaskRecord) -> Self {
        if who == rec.task.executor { Self::Executor } else { Self::Client }
    }

    /// The party's name, as serialized (`client`, `executor`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Executor => "executor",
        }
    }
}

impl std::fmt::Display for Appellant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// What an appeal adds to the evidence: the ruling appealed and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppealEvidence {
    /// Who appealed.
    pub appellant: Appellant,
    /// The appellant's reason.
    pub reason: String,
    /// The executor's share the appealed ruling gave, in basis points; it
    /// stands if the appeal goes undecided.
    pub ruling_share_bps: u16,
    /// The appealed ruling's rationale.
    pub ruling_rationale: String,
}

/// Where an appeal's parts are, as the task's events name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppealFiled<'a> {
    /// Who appealed (`RulingAppealed.appellant`).
    pub appellant: Address,
    /// The appellant's reason (`RulingAppealed.reasonURI`).
    pub reason_uri: &'a str,
    /// The appealed ruling's share (`DisputeRuled.executorShareBps`).
    pub ruling_share_bps: u16,
    /// The appealed ruling's rationale (`DisputeRuled.rationaleURI`).
    pub ruling_rationale_uri: &'a str,
}

impl Evidence {
    /// The result's main text: its `text` field, else its string form.
    pub fn result_text(&self) -> String {
        match &self.result {
            Some(Value::Object(o)) => match o.get("text").and_then(Value::as_str) {
                Some(t) => t.to_owned(),
                None => Value::Object(o.clone()).to_string(),
            },
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        }
    }
}

/// Gathers the evidence of `rec` (a disputed task) given its reason URI.
pub fn gather(rec: &TaskRecord, reason_uri: &str, blobs: &dyn BlobStore) -> Evidence {
    let codec = EnvelopeCodec::default();
    let mut problems = Vec::new();
    let (capability, spec, material) = match codec.decode(&rec.spec_uri, blobs) {
        Ok(e) => {
            let material = e.source.clone().unwrap_or_else(|| {
                e.inputs.iter().map(|i| i.output.as_str()).collect::<Vec<_>>().join("\n\n")
            });
            (e.capability, e.spec, material)
        }
        Err(e) => {
            problems.push(format!("envelope: {e}"));
            (None, String::new(), String::new())
        }
    };
    let result =
        match rec.result_uri.as_deref() {
            None => {
                problems.push("result: none delivered".into());
                None
            }
            Some(uri) => match codec.fetch(uri, blobs) {
                Ok(bytes) => Some(serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                    Value::String(String::from_utf8_lossy(&bytes).into_owned())
                })),
                Err(e) => {
                    problems.push(format!("result: {e}"));
                    None
                }
            },
        };
    let reason = statement(reason_uri, "reason", blobs).unwrap_or_else(|e| {
        problems.push(format!("reason: {e}"));
        String::new()
    });
    Evidence {
        task_id: rec.id.to_string(),
        capability,
        spec,
        material,
        result,
        reason,
        problems,
        appeal: None,
    }
}

/// Gathers the evidence of `rec` (an appealed task): the dispute's (see
/// [`gather`], with the dispute's `reason_uri`) and the appeal `filed`.
pub fn gather_appeal(
    rec: &TaskRecord,
    reason_uri: &str,
    filed: &AppealFiled<'_>,
    blobs: &dyn BlobStore,
) -> Evidence {
    let mut e = gather(rec, reason_uri, blobs);
    let reason = statement(filed.reason_uri, "reason", blobs).unwrap_or_else(|err| {
        e.problems.push(format!("appeal reason: {err}"));
        String::new()
    });
    let ruling_rationale = statement(filed.ruling_rationale_uri, "rationale", blobs)
        .unwrap_or_else(|err| {
            e.problems.push(format!("ruling rationale: {err}"));
            String::new()
        });
    e.appeal = Some(AppealEvidence {
        appellant: Appellant::of(filed.appellant, rec),
        reason,
        ruling_share_bps: filed.ruling_share_bps,
        ruling_rationale,
    });
    e
}

/// The text published at `uri`: its `field` when it is a JSON object with
/// that string, the JSON otherwise, the bytes as text when not JSON.
fn statement(uri: &str, field: &str, blobs: &dyn BlobStore) -> Result<String, String> {
    let bytes = EnvelopeCodec::default().fetch(uri, blobs).map_err(|e| e.to_string())?;
    Ok(match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) => v.get(field).and_then(Value::as_str).map_or_else(|| v.to_string(), str::to_owned),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use alloy::primitives::{B256, U256};
    use serde_json::json;
    use tessera_bindings::{
        ITaskEscrow::Task,
        envelope::{Envelope, MemoryBlobStore, Parent},
    };

    use super::*;

    const CLIENT: Address = Address::repeat_byte(0xc1);
    const EXECUTOR: Address = Address::repeat_byte(0xe1);

    fn delivered(blobs: &MemoryBlobStore, result: &Value) -> TaskRecord {
        let codec = EnvelopeCodec::default();
        let mut envelope = Envelope::new(Parent::Task("1".into()), "Summarize the note");
        envelope.capability = Some("summarize".into());
        envelope.source = Some("The ferry leaves at nine.".into());
        TaskRecord {
            id: U256::from(7u64),
            plan_id: B256::ZERO,
            parent_id: U256::ZERO,
            reference: B256::ZERO,
            capability: B256::ZERO,
            spec_uri: codec.encode(&envelope, blobs).unwrap(),
            result_uri: Some(codec.publish(result.to_string().as_bytes(), blobs).unwrap()),
            decline_reason_uri: None,
            rating: None,
            task: Task { client: CLIENT, executor: EXECUTOR, ..Default::default() },
        }
    }

    fn publish(blobs: &MemoryBlobStore, body: &Value) -> String {
        EnvelopeCodec::default().publish(body.to_string().as_bytes(), blobs).unwrap()
    }

    #[test]
    fn an_appeal_carries_the_ruling_and_the_appellants_reason() {
        let blobs = MemoryBlobStore::new();
        let rec = delivered(&blobs, &json!({"text": "The ferry leaves at nine."}));
        let dispute = publish(&blobs, &json!({"reason": "it repeats the note"}));
        let appeal = publish(&blobs, &json!({"reason": "the split pays for a copy"}));
        let ruling = publish(
            &blobs,
            &json!({"verdict": "split", "executor_share_bps": 6_000, "rationale": "Score 0.60: close to the note."}),
        );
        let filed = AppealFiled {
            appellant: CLIENT,
            reason_uri: &appeal,
            ruling_share_bps: 6_000,
            ruling_rationale_uri: &ruling,
        };
        let e = gather_appeal(&rec, &dispute, &filed, &blobs);
        assert_eq!(e.reason, "it repeats the note");
        assert!(e.problems.is_empty(), "{:?}", e.problems);
        assert_eq!(
            e.appeal,
            Some(AppealEvidence {
                appellant: Appellant::Client,
                reason: "the split pays for a copy".into(),
                ruling_share_bps: 6_000,
                ruling_rationale: "Score 0.60: close to the note.".into(),
            })
        );
        assert_eq!(Appellant::of(EXECUTOR, &rec), Appellant::Executor);
        // A first dispute has no appeal, and says so by leaving it out.
        let first = gather(&rec, &dispute, &blobs);
        assert_eq!(first.appeal, None);
        assert!(serde_json::to_value(&first).unwrap().get("appeal").is_none());
    }

    #[test]
    fn an_unreadable_appeal_is_a_problem_not_a_crash() {
        let blobs = MemoryBlobStore::new();
        let rec = delivered(&blobs, &json!({"text": "The ferry leaves at nine."}));
        let missing = format!("sha256:{}", "ab".repeat(32));
        // A reason without the `reason` field is kept as the JSON it is.
        let reason = publish(&blobs, &json!({"note": "plain words"}));
        let filed = AppealFiled {
            appellant: EXECUTOR,
            reason_uri: &reason,
            ruling_share_bps: 0,
            ruling_rationale_uri: &missing,
        };
        let e = gather_appeal(&rec, &reason, &filed, &blobs);
        let appeal = e.appeal.expect("an appeal");
        assert_eq!(
            (appeal.appellant, appeal.reason.as_str()),
            (Appellant::Executor, r#"{"note":"plain words"}"#)
        );
        assert_eq!(appeal.ruling_rationale, "");
        assert!(e.problems.iter().any(|p| p.starts_with("ruling rationale: ")), "{:?}", e.problems);
    }
}
