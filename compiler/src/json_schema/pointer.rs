//! JSON pointers (RFC 6901) as the JSON Schema front end writes and reads
//! them: the place of every note and `$ref`.

use std::borrow::Cow;
use std::fmt::Write;

/// A key as a JSON-pointer token.
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The pointer of `token` (a keyword, a property name) under the schema
/// at `pointer`, made in one allocation.
pub(crate) fn pointer_to(pointer: &str, token: &str) -> String {
    let mut at = String::with_capacity(pointer.len() + 1 + token.len());
    at.push_str(pointer);
    at.push('/');
    if token.contains(['~', '/']) {
        at.push_str(&escape(token));
    } else {
        at.push_str(token);
    }
    at
}

/// The pointer of the `index`th item of the array at `pointer` (a branch
/// of `anyOf`, an item of `allOf`), made in one allocation: a schema of
/// hundreds of alternatives names each of them at every merge that meets
/// the choice, and `format!` grew each string twice.
pub(crate) fn pointer_to_index(pointer: &str, index: usize) -> String {
    let mut at = String::with_capacity(pointer.len() + 1 + 20);
    at.push_str(pointer);
    at.push('/');
    // Writing into reserved room does not grow the string.
    let _ = write!(at, "{index}");
    at
}

/// The key a JSON pointer token names (the inverse of [`escape`]); most
/// tokens have no escape, and are not copied.
pub(crate) fn unescape(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

/// `#` and the pointer, as shown to users.
pub(crate) fn shown(pointer: &str) -> String {
    format!("#{pointer}")
}
