//! The model of `#[spider(...)]`, checked key by key as it is read.

use std::time::Duration;

use spider_settings::{Key, Kind};
use syn::{Expr, ExprArray, ExprLit, Lit, LitStr};

use super::rule::{self, Rule};
use crate::errors::Errors;

/// A checked value, ready to forward to a `Config` builder method.
pub(crate) enum Value {
    Text(LitStr),
    TextList(Vec<LitStr>),
    Number(syn::LitInt),
    Bool(syn::LitBool),
    Duration(Duration),
    Delay(Duration, Duration),
    Header(Vec<(String, String)>),
    GeoRules(Vec<(String, String)>),
    Statuses(Vec<syn::LitInt>),
    Decimal(f64),
    Type(syn::Path),
    /// `pipeline = [...]`: each stage as written, for rustc to type-check.
    Stages(Vec<Expr>),
}

/// The keys of `#[spider(...)]`, in the order written, and its `rule(...)`s.
#[derive(Default)]
pub(crate) struct Settings {
    pub(crate) values: Vec<(&'static Key, Value)>,
    pub(crate) rules: Vec<Rule>,
}

impl Settings {
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.values.iter().find(|(key, _)| key.name == name).map(|(_, value)| value)
    }

    pub(crate) fn read(input: &syn::DeriveInput, errors: &mut Errors) -> Settings {
        let mut settings = Settings::default();
        if !input.generics.params.is_empty() {
            errors.at(
                &input.generics,
                "#[derive(Spider)] does not take generic structs; implement SpiderConfig by hand",
            );
        }
        let mut seen: Vec<syn::Ident> = Vec::new();
        for attr in input.attrs.iter().filter(|a| a.path().is_ident("spider")) {
            let parsed = attr.parse_nested_meta(|meta| {
                let ident = meta.path.get_ident().cloned().ok_or_else(|| meta.error("expected a key"))?;
                if ident == "rule" {
                    if meta.input.peek(syn::token::Paren) {
                        settings.rules.extend(Rule::read(&meta, errors)?);
                    } else {
                        errors
                            .at(&ident, "a rule is written `rule(css = \"...\", allow = \"regex\", follow)`");
                        if meta.input.peek(syn::Token![=]) {
                            let _: Expr = meta.value()?.parse()?;
                        }
                    }
                    return Ok(());
                }
                let expr: Expr = meta.value()?.parse()?;
                let name = ident.to_string();
                if seen.contains(&ident) {
                    errors.at(&ident, format!("duplicate key `{name}`; it is already set above"));
                    return Ok(());
                }
                seen.push(ident.clone());
                let Some(key) = spider_settings::find(&name) else {
                    let mut names: Vec<&str> = spider_settings::KEYS.iter().map(|k| k.name).collect();
                    names.push("rule");
                    let hint = match spider_settings::closest(&name, &names) {
                        Some("rule") => "; did you mean `rule(...)`?".to_owned(),
                        Some(known) => format!("; did you mean `{known}`?"),
                        None => format!("; the keys are {}(...)", names.join(", ")),
                    };
                    errors.at(&ident, format!("unknown key `{name}`{hint}"));
                    return Ok(());
                };
                if !key.at_compile_time() {
                    errors.at(
                        &ident,
                        format!(
                            "`{name}` is given at run time (`--set {name}=...`): compiled \
                        in, it would act on every run"
                        ),
                    );
                    return Ok(());
                }
                if let Some(value) = check(key, &expr, errors) {
                    settings.values.push((key, value));
                }
                Ok(())
            });
            if let Err(error) = parsed {
                errors.push(error);
            }
        }
        let rates: Vec<&syn::Ident> = seen.iter().filter(|i| *i == "rpm" || *i == "rps").collect();
        if let [_, second] = rates.as_slice() {
            errors.at(second, "`rpm` and `rps` both set the rate ceiling; keep one");
        }
        if let Some(pipeline) = seen.iter().find(|key| *key == "pipeline") {
            if settings.rules.is_empty() && !seen.iter().any(|key| key == "item") {
                errors.at(
                    pipeline,
                    "`pipeline` runs the items of the derived rules (`rule(..., parse = T)` \
                    or `item = T`); a spider with its own `parse` returns its stages from `fn pipeline` in \
                        its `impl Spider`",
                );
            }
        }
        let stream = match settings.get("extract") {
            Some(Value::Text(engine)) if engine.value() == "stream" => Some(engine.clone()),
            _ => None,
        };
        rule::check(&settings.rules, &seen, stream.as_ref(), errors);
        settings.check_streams(errors);
        settings
    }

    /// With `extract = "stream"`, every selector the rules read must stream: an error at
    /// each one that does not, saying why.
    fn check_streams(&self, errors: &mut Errors) {
        if !matches!(self.get("extract"), Some(Value::Text(engine)) if engine.value() == "stream") {
            return;
        }
        let follow = match self.get("follow") {
            Some(Value::Text(css)) => Some(css),
            _ => None,
        };
        for css in self.rules.iter().filter_map(|rule| rule.css.as_ref()).chain(follow) {
            if let Err(why) = spider_settings::stream_selector(&css.value()) {
                errors.at(
                    css,
                    format!(
                        "`extract = \"stream\"`, but {why}; leave `extract` out to read such \
                    pages from the DOM"
                    ),
                );
            }
        }
    }
}

fn string(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s),
        _ => None,
    }
}

fn strings(expr: &Expr) -> Option<Vec<&LitStr>> {
    match expr {
        Expr::Array(ExprArray { elems, .. }) => elems.iter().map(string).collect(),
        _ => None,
    }
}

/// Check one value against its key; `None` after reporting the mistake.
fn check(key: &'static Key, expr: &Expr, errors: &mut Errors) -> Option<Value> {
    let name = key.name;
    let mut expect = |example: &str| {
        errors.at(expr, format!("`{name}` takes {example}"));
        None
    };
    match key.kind {
        Kind::Text => match (string(expr), strings(expr)) {
            (Some(s), _) => Some(Value::Text(s.clone())),
            // Several outputs: each its own builder call.
            (None, Some(list)) if name == "output" && !list.is_empty() => {
                Some(Value::TextList(list.into_iter().cloned().collect()))
            }
            _ if name == "output" => expect(
                "a file or a store's URI, or a list of them, such as `output = [\"books.jsonl\", \
                    \"sqlite://shop.db?table=books\"]`",
            ),
            _ => expect(&format!("a string, such as `{name} = \"...\"`")),
        },
        Kind::TextList => match strings(expr) {
            Some(list) => check_list(name, list, errors),
            None => expect(&format!("a list of strings, such as `{name} = [\"...\"]`")),
        },
        Kind::Positive | Kind::Count => match expr {
            Expr::Lit(ExprLit { lit: Lit::Int(n), .. }) => match n.base10_parse::<u32>() {
                Ok(0) if key.kind == Kind::Positive => {
                    errors.at(n, format!("`{name} = 0` admits nothing; write at least 1"));
                    None
                }
                Ok(big) if u64::from(big) > key.most() => {
                    errors.at(n, format!("`{name}` is at most {}", key.most()));
                    None
                }
                Ok(_) => Some(Value::Number(n.clone())),
                Err(e) => {
                    errors.at(n, format!("`{name}` does not fit in 32 bits: {e}"));
                    None
                }
            },
            _ => expect(&format!("a whole number, such as `{name} = 20`")),
        },
        Kind::Bool => match expr {
            Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) => Some(Value::Bool(b.clone())),
            _ => expect(&format!("`true` or `false`, such as `{name} = false`")),
        },
        Kind::Duration => match string(expr) {
            Some(s) => match spider_settings::parse_duration(&s.value()) {
                Ok(d) => Some(Value::Duration(d)),
                Err(message) => {
                    errors.at(s, message);
                    None
                }
            },
            None => expect(&format!("a duration string, such as `{name} = \"30s\"`")),
        },
        Kind::Delay => match string(expr) {
            Some(s) => match spider_settings::parse_delay(&s.value()) {
                Ok((min, max)) => Some(Value::Delay(min, max)),
                Err(message) => {
                    errors.at(s, message);
                    None
                }
            },
            None => expect("a pause or a range, such as `delay = \"1s..3s\"`"),
        },
        Kind::Profile => match string(expr) {
            Some(s) if spider_settings::profile(&s.value()).is_some() => Some(Value::Text(s.clone())),
            Some(s) => {
                let known = spider_settings::PROFILES.join(", ");
                errors.at(s, format!("profile `{}` does not exist; write one of {known}", s.value()));
                None
            }
            None => expect("a profile name, such as `profile = \"polite\"`"),
        },
        Kind::Selector => match string(expr) {
            Some(s) => match crate::check_selector(&s.value()) {
                Ok(()) => Some(Value::Text(s.clone())),
                Err(message) => {
                    errors.at(s, message);
                    None
                }
            },
            None => expect("a CSS selector string, such as `follow = \"a.next\"`"),
        },
        Kind::Proxy => {
            checked_text(key, expr, errors, "a route, such as `proxy = \"env:RESIDENTIAL_PROXY\"`", |v| {
                spider_settings::parse_proxy(v, true).map(|_| None)
            })
        }
        Kind::Country => checked_text(key, expr, errors, "a country code, such as `geo = \"us\"`", |v| {
            spider_settings::parse_country(v).map(Some)
        }),
        Kind::UserTemplate => checked_text(
            key,
            expr,
            errors,
            "a template, such as `proxy_user_template = \"{user}-cc-{geo}\"`",
            |v| spider_settings::check_user_template(v).map(|()| None),
        ),
        Kind::GeoRules => match strings(expr) {
            Some(list) => {
                let mut rules = Vec::new();
                for lit in list {
                    match spider_settings::parse_geo_rule(&lit.value()) {
                        Ok(rule) => rules.push(rule),
                        Err(message) => errors.at(lit, message),
                    }
                }
                Some(Value::GeoRules(rules))
            }
            None => expect("a list of rules, such as `geo_rules = [\"*.de=de\", \"*.fr=fr\"]`"),
        },
        Kind::Date => {
            checked_text(key, expr, errors, &format!("a date, such as `{name} = \"2026-01-01\"`"), |v| {
                spider_settings::parse_date(v).map(|_| None)
            })
        }
        Kind::Decimal => match expr {
            Expr::Lit(ExprLit { lit: Lit::Float(f), .. }) => f.base10_parse::<f64>().ok().map(Value::Decimal),
            Expr::Lit(ExprLit { lit: Lit::Int(n), .. }) => {
                n.base10_parse::<u32>().ok().map(|n| Value::Decimal(n.into()))
            }
            _ => expect(&format!("a number, such as `{name} = 8.5`")),
        },
        Kind::StatusList => match expr {
            Expr::Array(ExprArray { elems, .. }) => {
                let mut codes = Vec::new();
                for elem in elems {
                    match elem {
                        Expr::Lit(ExprLit { lit: Lit::Int(n), .. })
                            if n.base10_parse::<u16>().is_ok_and(|code| (100..=599).contains(&code)) =>
                        {
                            codes.push(n.clone());
                        }
                        other => errors.at(other, "an HTTP status is a whole number from 100 to 599"),
                    }
                }
                Some(Value::Statuses(codes))
            }
            _ => expect(&format!("a list of statuses, such as `{name} = [429, 503]`")),
        },
        Kind::Stages => match expr {
            Expr::Array(ExprArray { elems, .. }) if elems.is_empty() => {
                errors.at(
                    expr,
                    "the pipeline is empty; list its stages, such as `pipeline = [Tidy]`, or \
                    leave it out",
                );
                None
            }
            Expr::Array(ExprArray { elems, .. }) => Some(Value::Stages(elems.iter().cloned().collect())),
            _ => expect(
                "a list of stages, each a value whose type implements `Pipeline`, such as `pipeline \
                = [Tidy, MinPrice(1.0)]`",
            ),
        },
        Kind::Type => match expr {
            Expr::Path(path) if path.qself.is_none() => Some(Value::Type(path.path.clone())),
            _ => expect("a type deriving Item, such as `item = Book` (no quotes)"),
        },
        Kind::Impersonate => {
            checked_text(key, expr, errors, "a browser profile, such as `impersonate = \"chrome\"`", |v| {
                spider_settings::Impersonate::parse(v).map(|_| None)
            })
        }
        Kind::Render => checked_text(key, expr, errors, "a render mode, such as `render = \"auto\"`", |v| {
            spider_settings::Render::parse(v).map(|_| None)
        }),
        Kind::Politeness => checked_text(
            key,
            expr,
            errors,
            "which hosts share a budget, such as `politeness = \
                \"host\"`",
            |v| spider_settings::Politeness::parse(v).map(|_| None),
        ),
        Kind::Engine => match string(expr) {
            Some(s) if matches!(s.value().as_str(), "dom" | "stream") => Some(Value::Text(s.clone())),
            Some(s) => {
                errors.at(
                    s,
                    format!(
                        "`extract = \"{}\"` is not an engine; write \"dom\" or \"stream\", or \
                    leave it out to stream when every selector does",
                        s.value()
                    ),
                );
                None
            }
            None => expect("`\"dom\"` or `\"stream\"`, such as `extract = \"stream\"`"),
        },
    }
}

/// A string checked by `check`, which may give a normalised spelling; `None` after
/// reporting the mistake.
fn checked_text(
    key: &Key,
    expr: &Expr,
    errors: &mut Errors,
    example: &str,
    check: impl FnOnce(&str) -> Result<Option<String>, String>,
) -> Option<Value> {
    let Some(lit) = string(expr) else {
        errors.at(expr, format!("`{}` takes {example}", key.name));
        return None;
    };
    match check(&lit.value()) {
        Ok(normalised) => {
            let value = normalised.unwrap_or_else(|| lit.value());
            Some(Value::Text(LitStr::new(&value, lit.span())))
        }
        Err(message) => {
            errors.at(lit, message);
            None
        }
    }
}

fn check_list(name: &str, list: Vec<&LitStr>, errors: &mut Errors) -> Option<Value> {
    let mut ok = true;
    match name {
        "start_urls" | "sitemap_urls" => {
            let what = if name == "start_urls" { "start URL" } else { "sitemap URL" };
            for lit in &list {
                match url::Url::parse(&lit.value()) {
                    Ok(url) if matches!(url.scheme(), "http" | "https") => {}
                    Ok(url) => {
                        ok = false;
                        errors.at(lit, format!("{what} scheme `{}` is not http or https", url.scheme()));
                    }
                    Err(e) => {
                        ok = false;
                        errors.at(
                            lit,
                            format!(
                                "{what} does not parse ({e}); write an absolute URL such as \
                            \"https://example.com/\""
                            ),
                        );
                    }
                }
            }
        }
        "headers" => {
            let mut headers = Vec::new();
            for lit in &list {
                match lit.value().split_once(':') {
                    Some((header, value)) if !header.trim().is_empty() => {
                        headers.push((header.trim().to_owned(), value.trim().to_owned()));
                    }
                    _ => {
                        ok = false;
                        errors.at(lit, "a header is written `\"Name: value\"`");
                    }
                }
            }
            return ok.then_some(Value::Header(headers));
        }
        _ => {}
    }
    ok.then(|| Value::TextList(list.into_iter().cloned().collect()))
}
