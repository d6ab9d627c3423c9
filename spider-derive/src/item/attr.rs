//! The model of an item: one checked field attribute per field, `#[css(...)]`,
//! `#[json_ld(...)]`, `#[json(...)]` or `#[page(...)]`.

use syn::{Attribute, Data, Fields, GenericArgument, Ident, LitStr, PathArguments, Type};

use super::args::{Args, Opt, OptValue};
use crate::errors::Errors;

/// How many values a field takes, decided by its type.
pub(crate) enum Cardinality {
    /// `T`: exactly one, required unless `default`.
    One,
    /// `Option<T>`: one if any.
    Maybe,
    /// `Vec<T>`: all.
    All,
}

/// What a `#[css]` field reads from a matching element.
pub(crate) enum Source {
    Text,
    Html,
    Attr(LitStr),
}

/// One of the page's own facts, as `#[page(...)]` names it.
pub(crate) enum PageFact {
    Url,
    FinalUrl,
    Status,
    FetchedAt,
    Depth,
    Meta(LitStr),
    Rendered,
    Markdown,
    Text,
    Title,
    Author,
    Published,
    Lang,
    Description,
    SiteName,
}

impl PageFact {
    /// Whether a page may lack it: a meta key the request has not, and what a reader's view
    /// of a page with no main content, or without that metadata, lacks.
    fn may_lack(&self) -> bool {
        !matches!(
            self,
            PageFact::Url
                | PageFact::FinalUrl
                | PageFact::Status
                | PageFact::FetchedAt
                | PageFact::Depth
                | PageFact::Rendered
        )
    }

    /// The name as written, for messages and errors.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            PageFact::Url => "url",
            PageFact::FinalUrl => "final_url",
            PageFact::Status => "status",
            PageFact::FetchedAt => "fetched_at",
            PageFact::Depth => "depth",
            PageFact::Rendered => "rendered",
            PageFact::Meta(_) => "meta",
            PageFact::Markdown => "markdown",
            PageFact::Text => "text",
            PageFact::Title => "title",
            PageFact::Author => "author",
            PageFact::Published => "published",
            PageFact::Lang => "lang",
            PageFact::Description => "description",
            PageFact::SiteName => "site_name",
        }
    }
}

/// Where a field reads its value.
pub(crate) enum Reads {
    Css {
        selector: LitStr,
        source: Source,
    },
    JsonLd {
        path: LitStr,
        of_type: Option<LitStr>,
    },
    /// A JSON pointer into a page that is JSON.
    Json {
        pointer: LitStr,
    },
    Page(PageFact),
}

pub(crate) struct Field {
    pub(crate) ident: Ident,
    pub(crate) reads: Reads,
    pub(crate) parse: Option<syn::Path>,
    pub(crate) default: bool,
    pub(crate) cardinality: Cardinality,
    /// `T` of `T`, `Option<T>`, `Vec<T>`.
    pub(crate) inner: Type,
    /// `#[item(key)]`, as written: the item's key.
    pub(crate) key: Option<syn::Path>,
}

/// The item as a whole: its fields, and the struct's `#[item(validate = path)]`.
pub(crate) struct Model {
    pub(crate) fields: Vec<Field>,
    pub(crate) validate: Option<syn::Path>,
}

const ATTRIBUTES: &[&str] = &["css", "json_ld", "json", "page"];
const CSS_OPTIONS: &[&str] = &["attr", "html", "parse", "default"];
const JSON_LD_OPTIONS: &[&str] = &["type", "parse", "default"];
const JSON_OPTIONS: &[&str] = &["parse", "default"];
const PAGE_OPTIONS: &[&str] = &["parse", "default"];
const PAGE_FIELDS: &[&str] = &[
    "url",
    "final_url",
    "status",
    "fetched_at",
    "depth",
    "rendered",
    "meta",
    "markdown",
    "text",
    "title",
    "author",
    "published",
    "lang",
    "description",
    "site_name",
];

pub(crate) fn read(input: &syn::DeriveInput, errors: &mut Errors) -> Model {
    let validate = validate(&input.attrs, errors);
    let fields = read_fields(input, errors);
    let keys: Vec<&syn::Path> = fields.iter().filter_map(|field| field.key.as_ref()).collect();
    if let [_, second, ..] = keys.as_slice() {
        errors.at(second, "an item has one key; keep #[item(key)] on one field");
    }
    Model { fields, validate }
}

/// The struct's `#[item(validate = path)]`.
fn validate(attrs: &[Attribute], errors: &mut Errors) -> Option<syn::Path> {
    let mut validate = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("item")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("validate") {
                let path: syn::Path = meta.value()?.parse()?;
                if validate.is_some() {
                    errors.at(&path, "`validate` is given twice; call one function that checks everything");
                } else {
                    validate = Some(path);
                }
            } else if meta.path.is_ident("key") {
                errors.at(
                    &meta.path,
                    "`key` marks a field: write #[item(key)] above the field the items are told apart by",
                );
            } else {
                errors.at(
                    &meta.path,
                    "#[item(...)] on the struct takes `validate = my_function`, a fn(&Self) -> Result<(), E>",
                );
            }
            Ok(())
        });
        if let Err(error) = parsed {
            errors.push(error);
        }
    }
    validate
}

/// A field's `#[item(key)]`.
fn field_key(attrs: &[Attribute], errors: &mut Errors) -> Option<syn::Path> {
    let mut key = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("item")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("key") {
                key = Some(meta.path.clone());
            } else if meta.path.is_ident("validate") {
                errors.at(
                    &meta.path,
                    "`validate` checks the whole item: write #[item(validate = \
                    my_function)] above the struct",
                );
                if meta.input.peek(syn::Token![=]) {
                    let _: syn::Expr = meta.value()?.parse()?;
                }
            } else {
                errors.at(
                    &meta.path,
                    "#[item(...)] on a field takes `key`: the items are told apart by this \
                    field",
                );
            }
            Ok(())
        });
        if let Err(error) = parsed {
            errors.push(error);
        }
    }
    key
}

fn read_fields(input: &syn::DeriveInput, errors: &mut Errors) -> Vec<Field> {
    let named = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => Some(named),
            _ => None,
        },
        _ => None,
    };
    if !input.generics.params.is_empty() {
        errors.at(
            &input.generics,
            "#[derive(Item)] does not take generic structs; give the fields concrete types",
        );
        return Vec::new();
    }
    let Some(named) = named else {
        errors.at(
            &input.ident,
            "#[derive(Item)] needs a struct with named fields, each with \
            #[css(\"...\")], #[json_ld(\"...\")] or #[page(...)]",
        );
        return Vec::new();
    };
    let mut fields = Vec::new();
    for field in &named.named {
        let Some(ident) = field.ident.clone() else { continue };
        let attrs: Vec<&Attribute> =
            field.attrs.iter().filter(|a| ATTRIBUTES.iter().any(|name| a.path().is_ident(name))).collect();
        let Some(attr) = attrs.first() else {
            errors.at(
                &ident,
                format!(
                    "field `{ident}` reads nothing; add #[css(\"...\")], #[json_ld(\"...\")] or #[page(...)] \
                        above it"
                ),
            );
            continue;
        };
        for extra in &attrs[1..] {
            errors.at(
                extra,
                "a field reads from one place; keep one of #[css(...)], #[json_ld(...)], #[page(...)]",
            );
        }
        let args = match attr.parse_args::<Args>() {
            Ok(args) => args,
            Err(error) => {
                errors.push(error);
                continue;
            }
        };
        let key = field_key(&field.attrs, errors);
        if let Some(mut field) = check(&ident, &field.ty, attr, args, errors) {
            field.key = key;
            fields.push(field);
        }
    }
    fields
}

/// The options every attribute takes.
#[derive(Default)]
struct Common {
    parse: Option<syn::Path>,
    default: Option<Ident>,
}

fn check(ident: &Ident, ty: &Type, attr: &Attribute, args: Args, errors: &mut Errors) -> Option<Field> {
    let before = errors.count();
    let mut common = Common::default();
    let reads = if attr.path().is_ident("css") {
        css(attr, args, &mut common, errors)
    } else if attr.path().is_ident("json_ld") {
        json_ld(attr, args, &mut common, errors)
    } else if attr.path().is_ident("json") {
        json(attr, args, &mut common, errors)
    } else {
        page(attr, args, &mut common, errors)
    };
    let (cardinality, inner) = wrapper(ty);
    if !matches!(cardinality, Cardinality::One) && !matches!(wrapper(&inner).0, Cardinality::One) {
        errors.at(
            ty,
            "a field is `T` (one), `Option<T>` (maybe) or `Vec<T>` (all); a Vec is already empty \
            when nothing matches",
        );
    }
    if let Some(default) = &common.default {
        if !matches!(cardinality, Cardinality::One) {
            errors.at(
                default,
                "`default` is for a required field: an Option is None and a Vec empty when nothing matches",
            );
        }
    }
    if let Some(Reads::Page(fact)) = &reads {
        check_page_field(fact, ty, &cardinality, common.default.as_ref(), errors);
    }
    let reads = reads?;
    (errors.count() == before).then(|| Field {
        ident: ident.clone(),
        reads,
        parse: common.parse,
        default: common.default.is_some(),
        cardinality,
        inner,
        key: None,
    })
}

/// `#[css("selector", attr = "name" | html, parse = f, default)]`.
fn css(attr: &Attribute, args: Args, common: &mut Common, errors: &mut Errors) -> Option<Reads> {
    let mut source = Source::Text;
    let mut what: Vec<Ident> = Vec::new();
    options(args.options, "css", CSS_OPTIONS, common, errors, |Opt { name, value }, errors| {
        match (name.to_string().as_str(), value) {
            ("attr", Some(OptValue::Str(attribute))) => source = Source::Attr(attribute),
            ("attr", _) => errors.at(&name, "write `attr = \"href\"`: the attribute's name as a string"),
            ("html", None) => source = Source::Html,
            _ => errors.at(&name, "`html` takes no value; write `html`"),
        }
        what.push(name);
    });
    if let [_, second, ..] = what.as_slice() {
        errors.at(second, "`attr` and `html` both say what to read; keep one");
    }
    let Some(selector) = args.lead else {
        errors.at(attr, "write the selector first: #[css(\"h1.title\")]");
        return None;
    };
    if let Err(message) = crate::check_selector(&selector.value()) {
        errors.at(&selector, message);
    }
    Some(Reads::Css { selector, source })
}

/// `#[json_ld("dotted.path", type = "Type", parse = f, default)]`.
fn json_ld(attr: &Attribute, args: Args, common: &mut Common, errors: &mut Errors) -> Option<Reads> {
    let mut of_type = None;
    options(args.options, "json_ld", JSON_LD_OPTIONS, common, errors, |Opt { name, value }, errors| {
        match value {
            Some(OptValue::Str(wanted)) if wanted.value().trim().is_empty() => {
                errors.at(
                    &wanted,
                    "the type is empty; write the schema.org type, such as `type = \"Product\"`",
                );
            }
            Some(OptValue::Str(wanted)) => of_type = Some(wanted),
            _ => errors
                .at(&name, "write `type = \"Product\"`: the `@type` of the objects to read, as a string"),
        }
    });
    let Some(path) = args.lead else {
        errors.at(attr, "write the JSON-LD path first: #[json_ld(\"offers.price\")]");
        return None;
    };
    let text = path.value();
    if text.is_empty() {
        errors.at(
            &path,
            "the JSON-LD path is empty; write the keys from the object down, such as \"offers.price\"",
        );
    } else if text.split('.').any(str::is_empty) {
        errors.at(
            &path,
            format!(
                "the JSON-LD path `{text}` has an empty key; separate keys with single \
            dots, such as \"offers.price\""
            ),
        );
    }
    Some(Reads::JsonLd { path, of_type })
}

/// `#[json("/json/pointer", parse = f, default)]`: an RFC 6901 pointer, checked here.
fn json(attr: &Attribute, args: Args, common: &mut Common, errors: &mut Errors) -> Option<Reads> {
    options(args.options, "json", JSON_OPTIONS, common, errors, |_, _| {});
    let Some(pointer) = args.lead else {
        errors.at(attr, "write the JSON pointer first: #[json(\"/offers/0/price\")]");
        return None;
    };
    if let Err(message) = check_pointer(&pointer.value()) {
        errors.at(&pointer, message);
    }
    Some(Reads::Json { pointer })
}

/// A JSON pointer (RFC 6901) is empty (the whole document) or `/`-separated keys, each
/// `~` escaped as `~0` and each `/` in a key as `~1`.
fn check_pointer(pointer: &str) -> Result<(), String> {
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(format!(
            "a JSON pointer starts with `/` (or is empty, for the whole answer): write \"/{}\"",
            pointer.trim_start_matches('.').replace('.', "/")
        ));
    }
    let mut rest = pointer;
    while let Some(at) = rest.find('~') {
        if !matches!(rest.as_bytes().get(at + 1), Some(b'0' | b'1')) {
            return Err(format!(
                "`~` in the JSON pointer `{pointer}` must be `~0` (a `~` in a key) or `~1` (a `/` in a key)"
            ));
        }
        rest = &rest[at + 2..];
    }
    Ok(())
}

/// `#[page(name, parse = f, default)]` or `#[page(meta = "key", ...)]`.
fn page(attr: &Attribute, args: Args, common: &mut Common, errors: &mut Errors) -> Option<Reads> {
    if let Some(lead) = &args.lead {
        errors.at(lead, format!("write the page field as a name, not a string: #[page({})]", lead.value()));
        return None;
    }
    let mut args = args.options.into_iter();
    let Some(Opt { name, value }) = args.next() else {
        errors.at(
            attr,
            "write which page field to read, such as #[page(url)] or #[page(markdown)]: url, final_url, \
                status, fetched_at, depth, rendered, meta = \"key\", markdown, text, title, author, published, \
                lang, description, site_name",
        );
        return None;
    };
    let fact = match (name.to_string().as_str(), value) {
        ("meta", Some(OptValue::Str(key))) if key.value().is_empty() => {
            errors.at(
                &key,
                "the meta key is empty; write the key the request's meta has, such as `meta = \"category\"`",
            );
            None
        }
        ("meta", Some(OptValue::Str(key))) => Some(PageFact::Meta(key)),
        ("meta", _) => {
            errors.at(&name, "write `meta = \"key\"`: the key of the request's meta to read, as a string");
            None
        }
        (fact, Some(_)) if PAGE_FIELDS.contains(&fact) => {
            errors.at(&name, format!("`{fact}` takes no value; write #[page({fact})]"));
            None
        }
        ("url", None) => Some(PageFact::Url),
        ("final_url", None) => Some(PageFact::FinalUrl),
        ("status", None) => Some(PageFact::Status),
        ("rendered", None) => Some(PageFact::Rendered),
        ("fetched_at", None) => Some(PageFact::FetchedAt),
        ("depth", None) => Some(PageFact::Depth),
        ("markdown", None) => Some(PageFact::Markdown),
        ("text", None) => Some(PageFact::Text),
        ("title", None) => Some(PageFact::Title),
        ("author", None) => Some(PageFact::Author),
        ("published", None) => Some(PageFact::Published),
        ("lang", None) => Some(PageFact::Lang),
        ("description", None) => Some(PageFact::Description),
        ("site_name", None) => Some(PageFact::SiteName),
        (other, _) => {
            let hint = spider_settings::closest(other, PAGE_FIELDS).map_or_else(
                || format!("; the page fields are {}", PAGE_FIELDS.join(", ")),
                |f| format!("; did you mean `{f}`?"),
            );
            errors.at(&name, format!("unknown page field `{other}`{hint}"));
            None
        }
    };
    let (more_facts, rest): (Vec<Opt>, Vec<Opt>) =
        args.partition(|opt| PAGE_FIELDS.contains(&opt.name.to_string().as_str()));
    for extra in more_facts {
        errors.at(&extra.name, format!("a field reads one page field; this one reads `{name}` already"));
    }
    options(rest, "page", PAGE_OPTIONS, common, errors, |_, _| {});
    fact.map(Reads::Page)
}

/// A page field's type: one value, and `Option` or `default` only for what a page may lack
/// (a meta key, its main content and that content's metadata).
fn check_page_field(
    fact: &PageFact,
    ty: &Type,
    cardinality: &Cardinality,
    default: Option<&Ident>,
    errors: &mut Errors,
) {
    let name = fact.name();
    match (fact, cardinality) {
        (fact, Cardinality::All) => {
            let one = if fact.may_lack() { "`T` or `Option<T>`" } else { "`T`" };
            errors.at(ty, format!("a page field has one value: write {one} instead of a Vec"))
        }
        (fact, _) if fact.may_lack() => {}
        (_, Cardinality::Maybe) => {
            errors.at(ty, format!("a page's `{name}` is always there: write `T` instead of `Option<T>`"))
        }
        (_, Cardinality::One) => {
            if let Some(default) = default {
                errors.at(
                    default,
                    format!("a page's `{name}` is always there, so `default` would never apply; remove it"),
                );
            }
        }
    }
}

/// Read `parse` and `default`, and hand the other names `allowed` lists to `specific`;
/// report a name given twice, and an unknown one with the closest known.
fn options(
    opts: Vec<Opt>,
    attribute: &str,
    allowed: &[&str],
    common: &mut Common,
    errors: &mut Errors,
    mut specific: impl FnMut(Opt, &mut Errors),
) {
    let mut seen: Vec<String> = Vec::new();
    for opt in opts {
        let option = opt.name.to_string();
        if seen.contains(&option) {
            errors.at(&opt.name, format!("`{option}` is given twice"));
            continue;
        }
        seen.push(option.clone());
        match (option.as_str(), opt.value) {
            ("parse", Some(OptValue::Path(path))) => common.parse = Some(path),
            ("parse", _) => {
                errors.at(&opt.name, "write `parse = my_function` (no quotes): a fn(&str) -> Result<T, E>")
            }
            ("default", None) => common.default = Some(opt.name),
            ("default", Some(_)) => errors.at(&opt.name, "`default` takes no value; write `default`"),
            (known, value) if allowed.contains(&known) => specific(Opt { name: opt.name, value }, errors),
            (other, _) => errors.at(&opt.name, unknown_option(other, attribute, allowed)),
        }
    }
}

fn unknown_option(other: &str, attribute: &str, allowed: &[&str]) -> String {
    let elsewhere = [("css", CSS_OPTIONS), ("json_ld", JSON_LD_OPTIONS)]
        .into_iter()
        .find(|(name, options)| *name != attribute && options.contains(&other));
    if let Some((owner, _)) = elsewhere {
        return format!(
            "`{other}` is an option of #[{owner}(...)]; #[{attribute}(...)] takes {}",
            allowed.join(", ")
        );
    }
    let hint = spider_settings::closest(other, allowed).map_or_else(
        || format!("; the options are {}", allowed.join(", ")),
        |o| format!("; did you mean `{o}`?"),
    );
    format!("unknown option `{other}`{hint}")
}

fn wrapper(ty: &Type) -> (Cardinality, Type) {
    if let Type::Path(path) = ty {
        if let Some(last) = path.path.segments.last() {
            let wrapper = match last.ident.to_string().as_str() {
                "Option" => Some(Cardinality::Maybe),
                "Vec" => Some(Cardinality::All),
                _ => None,
            };
            if let (Some(wrapper), PathArguments::AngleBracketed(args)) = (wrapper, &last.arguments) {
                if let Some(GenericArgument::Type(inner)) = args.args.first() {
                    return (wrapper, inner.clone());
                }
            }
        }
    }
    (Cardinality::One, ty.clone())
}
