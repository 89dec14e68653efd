//! Resolve: the [`crate::syntax::ast`] of an entry file and everything it
//! imports → one checked [`tree::Grammar`].
//!
//! Passes, in order (each adds to the diagnostics and goes on):
//!
//! 1. **Load** — parse the entry file, then each import (`std/…` from the
//!    embedded library, other paths relative to the importing file), once per
//!    file. AFTER THIS POINT: every module is parsed; import cycles, missing
//!    files and duplicate aliases are reported.
//! 2. **Declare** — give every rule of every module a [`RuleId`], qualified
//!    by its import path (`json.value`). AFTER THIS POINT: duplicate rules and
//!    rule names that clash with an import alias are reported.
//! 3. **Lower** (`lower.rs`) — turn each body into a [`tree::Expr`]: references
//!    to ids, literals and classes decoded, regexes checked ([`crate::regex`]),
//!    macros and dispatch checked, JSON Schemas compiled by
//!    [`crate::json_schema`] into rules appended after the declared ones.
//! 4. **Analyse** (`analysis.rs`) — rules that can never produce a finite
//!    string (errors), rules not reachable from the entry rule and unused
//!    imports (warnings).
//!
//! The result is `None` if any error was reported.

mod analysis;

pub(crate) use analysis::check_limits;
mod lower;

use std::cell::Cell;
use std::collections::HashMap;

use xg_runtime::RuleId;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::request::Request;
use crate::source::{FileId, ImportTarget, Sources, Span};
use crate::syntax::{self, ast};
use crate::tree;

/// Resolves the grammar whose entry file is `entry`, starting at rule `root`,
/// within the request's budget. Embedded schemas whose rules are in the
/// request's cache are not generated again.
pub fn resolve(request: &mut Request, entry: FileId, root: &str) -> Option<tree::Grammar> {
    let Request {
        sources,
        diagnostics,
        cache,
        budget,
    } = request;
    let errors_before = diagnostics.error_count();
    let mut loader = Loader {
        sources,
        diagnostics,
        modules: Vec::new(),
        by_target: HashMap::new(),
        stack: Vec::new(),
    };
    loader.load(entry, None, "");
    let Loader {
        sources,
        diagnostics,
        modules,
        ..
    } = loader;

    let mut scope = Scope {
        modules,
        rules: Vec::new(),
    };
    scope.declare(diagnostics);

    let mut rules = Vec::with_capacity(scope.rules.len());
    let mut embedded = lower::Embedded {
        first: scope.rules.len(),
        rules: Vec::new(),
    };
    for declared in &scope.rules {
        if let Err(exceeded) = budget.check() {
            diagnostics.push(Diagnostic::error(
                "budget",
                exceeded.to_string(),
                declared.ast.name.span,
                "while resolving this rule",
            ));
            return None;
        }
        let mut lowerer = lower::Lowerer::new(
            &scope,
            sources,
            lower::Compilation { cache, budget },
            diagnostics,
            declared.module,
            &declared.name,
            &mut embedded,
        );
        let body = lowerer.expr(&declared.ast.body);
        let lookahead = declared.ast.lookahead.as_ref().map(|la| lowerer.expr(la));
        rules.push(resolved_rule(declared, body, lookahead, diagnostics));
    }

    rules.append(&mut embedded.rules);

    let root_id = scope.modules[0].rules.get(root).copied();
    if root_id.is_none() {
        let mut diagnostic = Diagnostic::error(
            "missing-root",
            format!("no rule named `{root}`"),
            Span::new(entry, 0, 0),
            format!("the entry rule `{root}` is not defined in this file"),
        );
        diagnostic = match scope.suggest(0, root) {
            Some(similar) => diagnostic.with_help(format!("did you mean `{similar}`?")),
            None => diagnostic.with_help(format!(
                "add `{root} ::= …`, or name another entry rule (`--root NAME` on the command \
                 line, `root = \"NAME\"` in `grammar!`)"
            )),
        };
        diagnostics.push(diagnostic);
    }

    analysis::check_rules(&rules, diagnostics);
    if let Some(root_id) = root_id {
        let entry_rules: Vec<RuleId> = scope
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.module == 0)
            .map(|(i, _)| RuleId::new(i).expect("rule count fits"))
            .collect();
        analysis::warn_unreachable(&rules, root_id, &entry_rules, diagnostics);
    }
    for import in &scope.modules[0].imports {
        if !import.used.get() {
            diagnostics.push(
                Diagnostic::warning(
                    "unused-import",
                    format!("unused import `{}`", import.alias.text),
                    import.alias.span,
                    "no rule of this import is used",
                )
                .with_help("remove the import"),
            );
        }
    }

    let root = root_id?;
    (diagnostics.error_count() == errors_before).then_some(tree::Grammar { rules, root })
}

/// A parsed file and the names it defines and imports.
struct Module {
    file: FileId,
    ast: ast::File,
    /// Prefix of its rules' qualified names (`""` for the entry, `json.` …).
    prefix: String,
    imports: Vec<Import>,
    rules: HashMap<String, RuleId>,
}

struct Import {
    alias: ast::Name,
    module: usize,
    used: Cell<bool>,
}

struct Loader<'a> {
    sources: &'a mut Sources,
    diagnostics: &'a mut Diagnostics,
    modules: Vec<Module>,
    by_target: HashMap<ImportTarget, usize>,
    /// Modules being loaded, outermost first (for cycle detection).
    stack: Vec<usize>,
}

impl Loader<'_> {
    fn load(&mut self, file: FileId, target: Option<ImportTarget>, prefix: &str) -> usize {
        let ast = syntax::parse(file, self.sources.text(file), self.diagnostics);
        let index = self.modules.len();
        let imports: Vec<ast::Import> = ast
            .items
            .iter()
            .filter_map(|item| match item {
                ast::Item::Import(import) => Some(import.clone()),
                ast::Item::Rule(_) => None,
            })
            .collect();
        self.modules.push(Module {
            file,
            ast,
            prefix: prefix.to_string(),
            imports: Vec::new(),
            rules: HashMap::new(),
        });
        if let Some(target) = target {
            self.by_target.insert(target, index);
        }
        self.stack.push(index);
        for import in imports {
            if let Some(first) = self.modules[index]
                .imports
                .iter()
                .find(|i| i.alias.text == import.alias.text)
            {
                let first_span = first.alias.span;
                self.diagnostics.push(
                    Diagnostic::error(
                        "name-clash",
                        format!("two imports are named `{}`", import.alias.text),
                        import.alias.span,
                        "second import with this name",
                    )
                    .with_label(first_span, "first imported here")
                    .with_help("give one of them another name with `as`"),
                );
                continue;
            }
            let Some(module) = self.import(file, &import) else {
                continue;
            };
            self.modules[index].imports.push(Import {
                alias: import.alias,
                module,
                used: Cell::new(false),
            });
        }
        self.stack.pop();
        index
    }

    /// Loads (or finds) the module `import` names; `None` after reporting why not.
    fn import(&mut self, importer: FileId, import: &ast::Import) -> Option<usize> {
        let path = &import.path;
        let target = match self.sources.import_target(importer, &path.value) {
            Ok(target) => target,
            Err(reason) => {
                self.diagnostics.push(import_not_found(path, &reason));
                return None;
            }
        };
        if let Some(&module) = self.by_target.get(&target) {
            if let Some(position) = self.stack.iter().position(|&m| m == module) {
                let chain: Vec<&str> = self.stack[position..]
                    .iter()
                    .map(|&m| self.sources.name(self.modules[m].file))
                    .chain(std::iter::once(
                        self.sources.name(self.modules[module].file),
                    ))
                    .collect();
                self.diagnostics.push(
                    Diagnostic::error(
                        "import-cycle",
                        "import cycle",
                        path.span,
                        format!("this import closes the cycle {}", chain.join(" → ")),
                    )
                    .with_help(
                        "imports must not loop; move the rules both files need into a third file",
                    ),
                );
                return None;
            }
            return Some(module);
        }
        let file = match &target {
            ImportTarget::Std(name) => self.sources.load_std(name),
            ImportTarget::Path(full) => match self.sources.load_as(
                full,
                self.sources.relative_name(importer, &path.value),
                self.diagnostics,
            ) {
                Ok(file) => file,
                Err(err) => {
                    let shown = self.sources.relative_name(importer, &path.value);
                    self.diagnostics.push(import_not_found(
                        path,
                        &format!("cannot read `{shown}`: {err}"),
                    ));
                    return None;
                }
            },
        };
        let importer_prefix =
            &self.modules[*self.stack.last().expect("an importer is loading")].prefix;
        let prefix = format!("{importer_prefix}{}.", import.alias.text);
        Some(self.load(file, Some(target), &prefix))
    }
}

/// `declared` with its body and lookahead lowered, its attributes read.
fn resolved_rule(
    declared: &Declared,
    body: tree::Expr,
    lookahead: Option<tree::Expr>,
    diagnostics: &mut Diagnostics,
) -> tree::Rule {
    let Attributes { capture, limit } = attributes(&declared.ast, diagnostics);
    tree::Rule {
        name: declared.name.clone(),
        span: declared.ast.name.span,
        body,
        lookahead,
        keep: false,
        capture,
        limit,
    }
}

/// What a rule's attributes ask of its matches.
#[derive(Default)]
struct Attributes {
    /// The name its matches are reported under, if it is captured
    /// (`[capture]`: the rule's own name; `[capture="label"]`: the label).
    capture: Option<String>,
    /// How long a match may be (`[max_tokens=N]`, `[max_bytes=N]`).
    limit: tree::Limit,
}

/// Reads a rule's attributes. An unknown attribute, one given twice, a
/// capture named otherwise than by a non-empty string, or a limit that is
/// not a positive integer below 2^32 is an error.
fn attributes(rule: &ast::Rule, diagnostics: &mut Diagnostics) -> Attributes {
    let mut read = Attributes::default();
    for attribute in &rule.attributes {
        let span = attribute
            .name
            .as_ref()
            .map_or(attribute.value.span, |name| {
                name.span.to(attribute.value.span)
            });
        let (name, value) = match (&attribute.name, &attribute.value.kind) {
            (Some(name), value) => (name.text.as_str(), Some(value)),
            (None, ast::ValueKind::Ident(name)) => (name.as_str(), None),
            (None, _) => ("", None),
        };
        let duplicate = match name {
            "capture" => {
                let named = match value {
                    None => Some(rule.name.text.clone()),
                    Some(ast::ValueKind::Str(label)) if !label.is_empty() => Some(label.clone()),
                    Some(_) => {
                        diagnostics.push(
                            Diagnostic::error(
                                "attribute-value",
                                "a capture is named by a non-empty string",
                                span,
                                "not a name for a capture",
                            )
                            .with_help(
                                "write `[capture]` to name the capture after the rule, or \
                                 `[capture=\"label\"]`",
                            ),
                        );
                        None
                    }
                };
                named.is_some() && read.capture.replace(named.unwrap_or_default()).is_some()
            }
            "max_tokens" | "max_bytes" => {
                let count = match value {
                    Some(&ast::ValueKind::Int(count)) if count > 0 => u32::try_from(count).ok(),
                    _ => None,
                };
                if count.is_none() {
                    diagnostics.push(
                        Diagnostic::error(
                            "attribute-value",
                            format!("`{name}` takes a positive whole number"),
                            span,
                            "not a count",
                        )
                        .with_help(format!("write `[{name}=64]`: at most 64 per match")),
                    );
                }
                let slot = if name == "max_tokens" {
                    &mut read.limit.tokens
                } else {
                    &mut read.limit.bytes
                };
                count.is_some() && slot.replace(count.unwrap_or_default()).is_some()
            }
            _ => {
                let message = if name.is_empty() {
                    "a rule attribute is a name".to_owned()
                } else {
                    format!("unknown rule attribute `{name}`")
                };
                diagnostics.push(
                    Diagnostic::error(
                        "unknown-attribute",
                        message,
                        span,
                        "not an attribute xg knows",
                    )
                    .with_help(
                        "a rule takes `[capture]` or `[capture=\"label\"]` (the matcher \
                         reports the text of each match, Matcher::captures), and \
                         `[max_tokens=N]` or `[max_bytes=N]` (each match ends within N)",
                    ),
                );
                false
            }
        };
        if duplicate {
            diagnostics.push(Diagnostic::error(
                "duplicate-attribute",
                format!("the rule has `{name}` twice"),
                span,
                "again here",
            ));
        }
    }
    read
}

fn import_not_found(path: &ast::Text, reason: &str) -> Diagnostic {
    Diagnostic::error(
        "import-not-found",
        format!("cannot import `{}`", path.value),
        path.span,
        reason,
    )
    .with_help(
        "relative paths start at the importing file's folder; the standard library is under `std/`",
    )
}

/// One declared rule: its qualified name, its module and its syntax.
struct Declared {
    name: String,
    module: usize,
    ast: ast::Rule,
}

/// All modules with their declared rules: what name lookups consult.
pub(crate) struct Scope {
    modules: Vec<Module>,
    rules: Vec<Declared>,
}

impl Scope {
    /// Gives every rule an id; reports duplicates and clashes with aliases.
    fn declare(&mut self, diagnostics: &mut Diagnostics) {
        for (index, module) in self.modules.iter_mut().enumerate() {
            for item in &module.ast.items {
                let ast::Item::Rule(rule) = item else {
                    continue;
                };
                let name = &rule.name.text;
                if let Some(&first) = module.rules.get(name) {
                    diagnostics.push(
                        Diagnostic::error(
                            "duplicate-rule",
                            format!("rule `{name}` is defined twice"),
                            rule.name.span,
                            "second definition",
                        )
                        .with_label(
                            self.rules[first.as_usize()].ast.name.span,
                            "first defined here",
                        )
                        .with_help("rename one of them, or join their bodies with `|`"),
                    );
                    continue;
                }
                let clash = module.imports.iter().find(|import| {
                    let alias = &import.alias.text;
                    name == alias
                        || name
                            .strip_prefix(alias.as_str())
                            .is_some_and(|rest| rest.starts_with('.'))
                });
                if let Some(import) = clash {
                    diagnostics.push(
                        Diagnostic::error(
                            "name-clash",
                            format!(
                                "rule `{name}` clashes with the import `{}`",
                                import.alias.text
                            ),
                            rule.name.span,
                            "this name",
                        )
                        .with_label(import.alias.span, "imported here")
                        .with_help("rename the rule or the import"),
                    );
                    continue;
                }
                let Ok(id) = RuleId::new(self.rules.len()) else {
                    diagnostics.push(Diagnostic::error(
                        "too-many-rules",
                        "too many rules",
                        rule.name.span,
                        "",
                    ));
                    return;
                };
                module.rules.insert(name.clone(), id);
                self.rules.push(Declared {
                    name: format!("{}{name}", module.prefix),
                    module: index,
                    ast: rule.clone(),
                });
            }
        }
    }

    /// The rule `name` refers to when written in `module`.
    pub(crate) fn lookup(&self, module: usize, name: &str) -> Option<RuleId> {
        let scope = &self.modules[module];
        if let Some(&id) = scope.rules.get(name) {
            return Some(id);
        }
        let (alias, rest) = name.split_once('.')?;
        let import = scope.imports.iter().find(|i| i.alias.text == alias)?;
        import.used.set(true);
        self.lookup(import.module, rest)
    }

    /// A visible name close to `name`, for "did you mean": within a third
    /// of its length in edits, a swap of two neighbouring letters counting
    /// as one (`nmae` → `name`).
    pub(crate) fn suggest(&self, module: usize, name: &str) -> Option<String> {
        let scope = &self.modules[module];
        let local = scope.rules.keys().cloned();
        let imported = scope.imports.iter().flat_map(|import| {
            self.modules[import.module]
                .rules
                .keys()
                .map(move |rule| format!("{}.{rule}", import.alias.text))
        });
        let limit = (name.chars().count() / 3).max(1);
        local
            .chain(imported)
            .map(|candidate| (strsim::osa_distance(name, &candidate), candidate))
            .filter(|(distance, _)| *distance <= limit)
            .min()
            .map(|(_, candidate)| candidate)
    }

    /// If an import of `module` defines `name`, the qualified name to use.
    pub(crate) fn qualified_in_import(&self, module: usize, name: &str) -> Option<String> {
        self.modules[module].imports.iter().find_map(|import| {
            self.modules[import.module]
                .rules
                .contains_key(name)
                .then(|| format!("{}.{name}", import.alias.text))
        })
    }
}
