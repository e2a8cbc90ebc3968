//! The evidence of a dispute, read from chain events and verified blobs: the
//! spec envelope, the delivered result and the client's reason. Anything that
//! cannot be read is recorded as such (and counts against whoever wrote it),
//! never a crash.

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
    /// Problems reading any of it (`envelope: …`, `result: …`, `reason: …`).
    pub problems: Vec<String>,
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
    let reason = match codec.fetch(reason_uri, blobs) {
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => {
                v.get("reason").and_then(Value::as_str).map_or_else(|| v.to_string(), str::to_owned)
            }
            Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
        },
        Err(e) => {
            problems.push(format!("reason: {e}"));
            String::new()
        }
    };
    Evidence { task_id: rec.id.to_string(), capability, spec, material, result, reason, problems }
}
