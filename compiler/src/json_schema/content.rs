//! Subschemas by content. Schemas that inline their definitions (the
//! "normalized" Kubernetes and Snowplow ones) repeat one subschema in
//! hundreds of places; references resolve against the whole document, so
//! equal text means equal meaning, and one rule serves every copy.

use rustc_hash::{FxHashMap, FxHasher};
use serde_json::Value;
use std::hash::{Hash, Hasher};

/// Content hashes of a document's values, each computed once.
#[derive(Default)]
pub(crate) struct Contents {
    /// By address: the document is borrowed for the whole compilation, so
    /// a value's address names it.
    hashes: FxHashMap<*const Value, u64>,
}

impl Contents {
    /// A hash of `value`'s content, key order included (the order of
    /// `properties` is the order members are written in).
    pub(crate) fn hash(&mut self, value: &Value) -> u64 {
        if let Some(&hash) = self.hashes.get(&std::ptr::from_ref(value)) {
            return hash;
        }
        let mut hasher = FxHasher::default();
        match value {
            Value::Null => 0u8.hash(&mut hasher),
            Value::Bool(b) => (1u8, b).hash(&mut hasher),
            Value::Number(n) => (2u8, n).hash(&mut hasher),
            Value::String(s) => (3u8, s).hash(&mut hasher),
            Value::Array(items) => {
                (4u8, items.len()).hash(&mut hasher);
                for item in items {
                    self.hash(item).hash(&mut hasher);
                }
            }
            Value::Object(map) => {
                (5u8, map.len()).hash(&mut hasher);
                for (key, item) in map {
                    key.hash(&mut hasher);
                    self.hash(item).hash(&mut hasher);
                }
            }
        }
        let hash = hasher.finish();
        self.hashes.insert(std::ptr::from_ref(value), hash);
        hash
    }
}

/// Whether `a` and `b` are the same JSON, key order included.
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::{Contents, same};
    use serde_json::json;

    #[test]
    fn equal_content_hashes_alike_and_key_order_counts() {
        let doc = json!({
            "a": {"type": "object", "properties": {"x": {"type": "string"}, "y": {}}},
            "b": {"type": "object", "properties": {"x": {"type": "string"}, "y": {}}},
            "c": {"type": "object", "properties": {"y": {}, "x": {"type": "string"}}},
            "d": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {}}}
        });
        let mut contents = Contents::default();
        let [a, b, c, d] = ["a", "b", "c", "d"].map(|k| &doc[k]);
        assert_eq!(contents.hash(a), contents.hash(b));
        assert!(same(a, b));
        assert_ne!(contents.hash(a), contents.hash(c));
        assert!(
            !same(a, c),
            "serde_json's == ignores key order; this must not"
        );
        assert_ne!(contents.hash(a), contents.hash(d));
        assert!(!same(a, d));
    }
}
