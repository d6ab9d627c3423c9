//! The model of `rule(...)` in `#[spider(...)]`: one link rule, checked option by option
//! as it is read, and the checks between rules and the other keys.

use syn::meta::ParseNestedMeta;
use syn::{Expr, ExprLit, ExprUnary, Lit, LitStr, UnOp};

use crate::errors::Errors;

/// The options of `rule(...)`.
const OPTIONS: &[&str] = &[
    "css",
    "allow",
    "deny",
    "follow",
    "parse",
    "priority",
    "files",
    "impersonate",
    "render",
    "wait_for",
    "scroll",
    "click",
];

/// One checked `rule(...)`.
pub(crate) struct Rule {
    /// Where to look; `None` for every link.
    pub(crate) css: Option<LitStr>,
    pub(crate) allow: Vec<LitStr>,
    pub(crate) deny: Vec<LitStr>,
    pub(crate) follow: bool,
    /// The item type its pages are parsed into.
    pub(crate) parse: Option<syn::Path>,
    pub(crate) priority: i32,
    pub(crate) files: bool,
    /// The browser profile its requests are sent with, as its variant's name.
    pub(crate) impersonate: Option<syn::Ident>,
    /// Where its pages are rendered, as the variant's name of `Render`.
    pub(crate) render: Option<syn::Ident>,
    /// What a render of its pages waits for besides the item's fields.
    pub(crate) wait_for: Option<LitStr>,
    /// Its pages scrolled until no new links come.
    pub(crate) scroll: bool,
    /// A button clicked on its pages until it is gone.
    pub(crate) click: Option<LitStr>,
}

impl Rule {
    /// Read the options of `rule(...)`; `None` after reporting its mistakes.
    pub(crate) fn read(meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<Option<Rule>> {
        let before = errors.count();
        let mut rule = Rule {
            css: None,
            allow: Vec::new(),
            deny: Vec::new(),
            follow: false,
            parse: None,
            priority: 0,
            files: false,
            impersonate: None,
            render: None,
            wait_for: None,
            scroll: false,
            click: None,
        };
        let mut seen: Vec<syn::Ident> = Vec::new();
        meta.parse_nested_meta(|option| {
            let ident = option.path.get_ident().cloned().ok_or_else(|| option.error("expected an option"))?;
            let name = ident.to_string();
            let value: Option<Expr> =
                if option.input.peek(syn::Token![=]) { Some(option.value()?.parse()?) } else { None };
            if seen.contains(&ident) {
                errors.at(&ident, format!("duplicate option `{name}` in this rule"));
                return Ok(());
            }
            seen.push(ident.clone());
            match (name.as_str(), value) {
                ("follow", None) => rule.follow = true,
                ("files", None) => rule.files = true,
                ("scroll", None) => rule.scroll = true,
                ("follow", Some(expr)) if string(&expr).is_some() => errors.at(
                    &expr,
                    "in a rule, `follow` is a flag; the selector goes in `css`: `rule(css = \"...\", \
                        follow)`",
                ),
                ("follow" | "files" | "scroll", Some(expr)) => {
                    errors.at(&expr, format!("`{name}` is a flag; write `{name}` alone, without a value"));
                }
                ("css", Some(expr)) => rule.css = selector(&expr, errors),
                ("allow", Some(expr)) => rule.allow = regexes(&name, &expr, errors),
                ("deny", Some(expr)) => rule.deny = regexes(&name, &expr, errors),
                ("parse", Some(expr)) => rule.parse = item_type(&expr, errors),
                ("priority", Some(expr)) => rule.priority = priority(&expr, errors),
                ("impersonate", Some(expr)) => {
                    let example = "`impersonate` takes a browser profile, such as `impersonate = \"chrome\"`";
                    let parse =
                        |v: &str| spider_settings::Impersonate::parse(v).map(|profile| profile.name());
                    rule.impersonate = variant(&expr, errors, example, parse);
                }
                ("render", Some(expr)) => {
                    let example = "`render` takes a render mode, such as `render = \"always\"`";
                    let parse = |v: &str| spider_settings::Render::parse(v).map(|mode| mode.name());
                    rule.render = variant(&expr, errors, example, parse);
                }
                ("wait_for", Some(expr)) => rule.wait_for = selector(&expr, errors),
                ("click", Some(expr)) => rule.click = selector(&expr, errors),
                (_, None) if OPTIONS.contains(&name.as_str()) => {
                    let example = match name.as_str() {
                        "css" => "`css = \"h3 > a\"`",
                        "allow" | "deny" => "a regex or a list of them, such as `allow = \"/catalogue/\"`",
                        "parse" => "a type deriving Item, such as `parse = Book`",
                        "impersonate" => "a browser profile, such as `impersonate = \"chrome\"`",
                        "render" => "a render mode, such as `render = \"always\"`",
                        "wait_for" => "a CSS selector, such as `wait_for = \".price\"`",
                        "click" => "a CSS selector, such as `click = \"button.more\"`",
                        _ => "a whole number, such as `priority = 10`",
                    };
                    errors.at(&ident, format!("`{name}` takes a value: {example}"));
                }
                _ => {
                    let hint = match spider_settings::closest(&name, OPTIONS) {
                        Some(known) => format!("did you mean `{known}`?"),
                        None => format!("the options are {}", OPTIONS.join(", ")),
                    };
                    errors.at(&ident, format!("unknown rule option `{name}`; {hint}"));
                }
            }
            Ok(())
        })?;
        // A mistaken `follow` or `parse` was reported where it is written.
        if !seen.iter().any(|option| option == "follow" || option == "parse") {
            errors.at(
                &meta.path,
                "this rule neither follows nor parses the pages it reaches; add `follow`, `parse = Item`, or \
                    both",
            );
        }
        Ok((errors.count() == before).then_some(rule))
    }
}

/// With rules, the `follow` key has no meaning of their own; `item` names the spider's
/// item when rules parse pages into several types (an enum of them), and some rule must
/// parse for it to mean anything. Rules of several types are read with the DOM, so
/// `extract = "stream"` (`stream`) cannot go with them.
pub(crate) fn check(rules: &[Rule], keys: &[syn::Ident], stream: Option<&LitStr>, errors: &mut Errors) {
    if rules.is_empty() {
        return;
    }
    for key in keys {
        if key == "follow" {
            errors.at(key, "with rules, write `rule(css = \"...\", follow)` instead of the `follow` key");
        } else if key == "item" && rules.iter().all(|rule| rule.parse.is_none()) {
            errors.at(
                key,
                "`item` names the item the rules' pages are parsed into, and no rule parses; add `parse = \
                 Book` to the rule whose pages give it",
            );
        }
    }
    let types = item_types(rules);
    let (Some(first), Some(second)) = (types.first(), types.get(1)) else { return };
    if !keys.iter().any(|key| key == "item") {
        errors.at(
            *second,
            format!(
                "rules parse `{}` and `{}`: name the spider's item, an enum with a variant of each that \
                 derives Item, with `item = Found`",
                spelling(first),
                spelling(second)
            ),
        );
    }
    if let Some(stream) = stream {
        errors.at(
            stream,
            "`extract = \"stream\"` reads one item type, and these rules parse several; leave \
            `extract` out to read their pages from the DOM",
        );
    }
}

/// The item types the rules parse into, each once, in the order of the rules.
pub(crate) fn item_types(rules: &[Rule]) -> Vec<&syn::Path> {
    let mut types: Vec<&syn::Path> = Vec::new();
    for path in rules.iter().filter_map(|rule| rule.parse.as_ref()) {
        if !types.iter().any(|seen| spelling(seen) == spelling(path)) {
            types.push(path);
        }
    }
    types
}

fn spelling(path: &syn::Path) -> String {
    quote::quote!(#path).to_string().replace(' ', "")
}

fn string(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s),
        _ => None,
    }
}

fn selector(expr: &Expr, errors: &mut Errors) -> Option<LitStr> {
    let Some(lit) = string(expr) else {
        errors.at(expr, "`css` takes a CSS selector string, such as `css = \"h3 > a\"`");
        return None;
    };
    match crate::check_selector(&lit.value()) {
        Ok(()) => Some(lit.clone()),
        Err(message) => {
            errors.at(lit, message);
            None
        }
    }
}

/// A regex or a list of them, each compiled here so a mistake is an error at its literal.
fn regexes(name: &str, expr: &Expr, errors: &mut Errors) -> Vec<LitStr> {
    let list: Vec<&LitStr> = match expr {
        Expr::Array(array) => match array.elems.iter().map(string).collect::<Option<Vec<_>>>() {
            Some(list) if list.is_empty() => {
                errors.at(expr, format!("an empty `{name}` list; leave `{name}` out instead"));
                return Vec::new();
            }
            Some(list) => list,
            None => {
                errors
                    .at(expr, format!("`{name}` takes regex strings, such as `{name} = [\"/a/\", \"/b/\"]`"));
                return Vec::new();
            }
        },
        _ => match string(expr) {
            Some(lit) => vec![lit],
            None => {
                errors.at(
                    expr,
                    format!(
                        "`{name}` takes a regex string or a list of them, such as \
                        `{name} = \"/catalogue/\"`"
                    ),
                );
                return Vec::new();
            }
        },
    };
    for lit in &list {
        if let Err(error) = regex::Regex::new(&lit.value()) {
            errors.at(lit, format!("`{name}` regex does not compile: {error}"));
        }
    }
    list.into_iter().cloned().collect()
}

fn item_type(expr: &Expr, errors: &mut Errors) -> Option<syn::Path> {
    match expr {
        Expr::Path(path) if path.qself.is_none() => Some(path.path.clone()),
        _ => {
            errors.at(expr, "`parse` takes a type deriving Item, such as `parse = Book` (no quotes)");
            None
        }
    }
}

/// A rule's browser profile, or its render mode: the value checked as the key's is by
/// `parse` (which gives the value's name back), and the variant it names, the name
/// capitalised.
fn variant(
    expr: &Expr,
    errors: &mut Errors,
    example: &str,
    parse: impl FnOnce(&str) -> Result<&'static str, String>,
) -> Option<syn::Ident> {
    let Some(lit) = string(expr) else {
        errors.at(expr, example);
        return None;
    };
    match parse(&lit.value()) {
        Ok(name) => {
            Some(syn::Ident::new(&format!("{}{}", name[..1].to_ascii_uppercase(), &name[1..]), lit.span()))
        }
        Err(message) => {
            errors.at(lit, message);
            None
        }
    }
}

fn priority(expr: &Expr, errors: &mut Errors) -> i32 {
    let magnitude = |expr: &Expr| match expr {
        Expr::Lit(ExprLit { lit: Lit::Int(n), .. }) => Some(n.base10_parse::<i64>().unwrap_or(i64::MAX)),
        _ => None,
    };
    let value = match expr {
        Expr::Unary(ExprUnary { op: UnOp::Neg(_), expr: inner, .. }) => magnitude(inner).map(|m| -m),
        _ => magnitude(expr),
    };
    match value.map(i32::try_from) {
        Some(Ok(priority)) => priority,
        Some(Err(_)) => {
            errors.at(
                expr,
                "`priority` does not fit in 32 bits; write a number from -2147483648 to 2147483647",
            );
            0
        }
        None => {
            errors.at(
                expr,
                "`priority` takes a whole number, such as `priority = 10` (higher is fetched sooner)",
            );
            0
        }
    }
}
