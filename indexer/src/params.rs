//! Parameters as both query surfaces take them, REST ([`crate::api`]) and
//! GraphQL ([`crate::graphql`]): one check each, with one message, so the
//! two refuse alike, and values in the form the index stores (addresses
//! checksummed, plan ids lower case) so a filter uses the column's index.

use tessera_bindings::task::Status;

/// A parameter that is not what its name says; the message names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParamError(pub String);

fn refuse(message: String) -> ParamError {
    ParamError(message)
}

/// Whether `s` is `0x` and `digits` hex digits (the hex parsers alone would
/// also take the digits without `0x`).
fn is_prefixed_hex(s: &str, digits: usize) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|hex| hex.len() == digits && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `id` checked as a task id (decimal, at most 78 digits).
pub fn task_id(id: &str) -> Result<(), ParamError> {
    if id.is_empty() || id.len() > 78 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refuse(format!("{id:?} is not a task id (decimal)")));
    }
    Ok(())
}

/// `id` checked as a plan id (0x + 64 hex), lower case.
pub fn plan_id(id: &str) -> Result<String, ParamError> {
    if !is_prefixed_hex(id, 64) {
        return Err(refuse(format!("{id:?} is not a plan id (0x + 64 hex)")));
    }
    Ok(id.to_ascii_lowercase())
}

/// `address` (named `what`) checked as an address (0x + 40 hex), in its
/// checksummed form, the form the index stores.
pub fn address(what: &str, address: &str) -> Result<String, ParamError> {
    if !is_prefixed_hex(address, 40) {
        return Err(refuse(format!("{what} {address:?} is not an address (0x + 40 hex)")));
    }
    address
        .parse::<alloy::primitives::Address>()
        .map(|a| a.to_string())
        .map_err(|e| refuse(format!("{what} {address:?}: {e}")))
}

/// `names` checked as status names of the contract.
pub fn statuses(names: Vec<String>) -> Result<Vec<String>, ParamError> {
    for n in &names {
        if !Status::ALL.iter().any(|s| s.as_str() == n) {
            let known: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
            return Err(refuse(format!(
                "{n:?} is not a task status (one of {})",
                known.join(", ")
            )));
        }
    }
    Ok(names)
}

/// A capability name as the registry's rule has it (1–31 bytes of
/// `[a-z0-9-]`).
pub fn capability(name: &str) -> Result<(), ParamError> {
    tessera_bindings::capability::check(name).map_err(|e| refuse(e.to_string()))
}

/// A count that cannot be negative (a time, a block).
pub fn non_negative(what: &str, v: Option<i64>) -> Result<(), ParamError> {
    match v {
        Some(v) if v < 0 => Err(refuse(format!("{what} {v} is negative"))),
        _ => Ok(()),
    }
}

/// A page size (named `what`) within `1..=max`, not quietly clamped.
pub fn page_size(what: &str, size: i64, max: i64) -> Result<i64, ParamError> {
    if !(1..=max).contains(&size) {
        return Err(refuse(format!("{what} {size} is not within 1..={max}")));
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_in_the_stored_form_and_refusals_name_the_parameter() {
        let lower = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
        assert_eq!(
            address("executor", lower).unwrap(),
            "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
        );
        let e = address("executor", "70997970c51812dc3a010c7d01b50e0d17dc79c8").unwrap_err();
        assert!(e.0.starts_with("executor ") && e.0.contains("0x + 40 hex"), "{e}");
        assert_eq!(
            plan_id(&format!("0x{}", "AB".repeat(32))).unwrap(),
            format!("0x{}", "ab".repeat(32))
        );
        assert!(plan_id("0x12").is_err());
        assert!(task_id("12").is_ok() && task_id("").is_err() && task_id("1e3").is_err());
        assert!(task_id(&"9".repeat(79)).is_err());
        assert_eq!(statuses(vec!["Paid".into()]).unwrap(), ["Paid"]);
        assert!(statuses(vec!["paid".into()]).unwrap_err().0.contains("one of"));
        assert!(capability("summarize").is_ok() && capability("Summarize").is_err());
        assert!(non_negative("since", Some(-1)).unwrap_err().0.contains("since -1"));
        assert_eq!(page_size("limit", 500, 500), Ok(500));
        assert!(page_size("limit", 0, 500).is_err() && page_size("first", 501, 500).is_err());
    }
}
