//! Tool arguments checked against the tool's JSON Schema before a call
//! runs, with each compiled schema kept for the next call.

use std::sync::{Arc, PoisonError};

use serde_json::Value;

use super::Agent;
use crate::tool::ToolSpec;

impl Agent {
    /// Checks tool arguments against the tool's JSON Schema; a violation is
    /// an error result the model sees. The compiled schema is kept for the
    /// next call of the same tool (see [`Agent::validators`]).
    pub(super) fn validate(&self, spec: &ToolSpec, args: &Value) -> Result<(), String> {
        let cached = self
            .validators
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&spec.name)
            // The same shared schema, or an equal one re-registered.
            .filter(|(schema, _)| Arc::ptr_eq(schema, &spec.schema) || *schema == spec.schema)
            .map(|(_, validator)| Arc::clone(validator));
        let validator = match cached {
            Some(validator) => validator,
            None => {
                let validator =
                    Arc::new(jsonschema::validator_for(&spec.schema).map_err(|e| {
                        format!("tool \"{}\" has an invalid schema: {e}", spec.name)
                    })?);
                self.validators
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(
                        spec.name.clone(),
                        (Arc::clone(&spec.schema), Arc::clone(&validator)),
                    );
                validator
            }
        };
        check(&validator, spec, args)
    }
}

/// `args` against `spec`'s compiled schema.
fn check(validator: &jsonschema::Validator, spec: &ToolSpec, args: &Value) -> Result<(), String> {
    if validator.is_valid(args) {
        return Ok(());
    }
    let problems: Vec<String> = validator.iter_errors(args).map(|e| e.to_string()).collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid arguments for {}: {}",
            spec.name,
            problems.join("; ")
        ))
    }
}
