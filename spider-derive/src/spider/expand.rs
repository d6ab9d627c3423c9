//! Code generation for `#[derive(Spider)]`: forward each key to its `Config` builder
//! method, so rustc type-checks the values and the builder's docs document the keys.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::attr::{Settings, Value};
use super::rule::Rule;

pub(crate) fn expand(input: &syn::DeriveInput, settings: &Settings) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let name = match settings.get("name") {
        Some(Value::Text(name)) => quote!(#name),
        _ => {
            let snake = snake_case(&ident.to_string());
            quote!(#snake)
        }
    };
    // The profile first: every explicit key wins over it.
    let mut calls = Vec::new();
    if let Some(Value::Text(profile)) = settings.get("profile") {
        calls.push(quote!(.profile(#profile)));
    }
    for (key, value) in &settings.values {
        calls.extend(call(key.name, value));
    }
    let spider = rules(input, settings);
    quote! {
        const _: () = {
            impl #impl_generics ::spiderling::SpiderConfig for #ident #type_generics #where_clause {
                fn config(&self) -> ::spiderling::Config {
                    ::spiderling::Config::new(#name) #(#calls)*
                }
            }
            #spider
        };
    }
}

/// The builder calls for one key.
fn call(key: &str, value: &Value) -> Vec<TokenStream> {
    let method = format_ident!("{}", key);
    match (key, value) {
        ("name" | "profile" | "follow" | "item" | "extract" | "pipeline", _) => Vec::new(),
        ("start_urls", Value::TextList(urls)) => urls.iter().map(|u| quote!(.start_url(#u))).collect(),
        ("sitemap_urls", Value::TextList(urls)) => urls.iter().map(|u| quote!(.sitemap_url(#u))).collect(),
        ("allowed_domains", Value::TextList(domains)) => {
            domains.iter().map(|d| quote!(.allowed_domain(#d))).collect()
        }
        ("block_markers", Value::TextList(markers)) => {
            markers.iter().map(|m| quote!(.block_marker(#m))).collect()
        }
        ("user_agents", Value::TextList(agents)) => vec![quote!(.user_agents([#(#agents),*]))],
        ("output", Value::TextList(outputs)) => outputs.iter().map(|o| quote!(.output(#o))).collect(),
        ("geo_rules", Value::GeoRules(rules)) => {
            rules.iter().map(|(pattern, country)| quote!(.geo_rule(#pattern, #country))).collect()
        }
        (_, Value::Decimal(n)) => vec![quote!(.#method(#n))],
        ("headers", Value::Header(headers)) => {
            headers.iter().map(|(name, value)| quote!(.header(#name, #value))).collect()
        }
        (_, Value::Delay(min, max)) => {
            // `delay` is a range of pauses; `backoff` the bounds of a wait.
            let method = if key == "delay" { format_ident!("delay_range") } else { method };
            let (min, max) = (millis(*min), millis(*max));
            vec![quote!(.#method(
                ::spiderling::__private::Duration::from_millis(#min),
                ::spiderling::__private::Duration::from_millis(#max),
            ))]
        }
        (_, Value::Statuses(codes)) => vec![quote!(.#method([#(#codes),*]))],
        (_, Value::Duration(duration)) => {
            let ms = millis(*duration);
            vec![quote!(.#method(::spiderling::__private::Duration::from_millis(#ms)))]
        }
        ("impersonate" | "render" | "politeness", Value::Text(text)) => {
            // Checked by `attr.rs`: one of the values' names, whose variant is the name
            // capitalised, of the enum the key is named for.
            let name = text.value();
            let variant =
                format_ident!("{}{}", name[..1].to_ascii_uppercase(), &name[1..], span = text.span());
            let kind = match key {
                "render" => format_ident!("Render"),
                "politeness" => format_ident!("Politeness"),
                _ => format_ident!("Impersonate"),
            };
            vec![quote!(.#method(::spiderling::__private::#kind::#variant))]
        }
        (_, Value::Text(text)) => vec![quote!(.#method(#text))],
        (_, Value::Number(n)) => vec![quote!(.#method(#n))],
        (_, Value::Bool(b)) => vec![quote!(.#method(#b))],
        _ => Vec::new(),
    }
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// With `rule(...)`s, `item` or `follow`, the whole `Spider` impl: parse by the rules.
/// `follow = "css"` and `item = T` are the short form of one rule: every page parsed into
/// `T` and the links `css` finds followed.
fn rules(input: &syn::DeriveInput, settings: &Settings) -> TokenStream {
    let engine = match settings.get("extract") {
        Some(Value::Text(engine)) if engine.value() == "dom" => Engine::Dom,
        Some(Value::Text(_)) => Engine::Stream,
        _ => Engine::Auto,
    };
    let stages = match settings.get("pipeline") {
        Some(Value::Stages(stages)) => stages.as_slice(),
        _ => &[],
    };
    let item = settings.get("item");
    if !settings.rules.is_empty() {
        let item = match item {
            Some(Value::Type(path)) => Some(path),
            _ => None,
        };
        return link_rules(input, &settings.rules, engine, stages, item);
    }
    let follow = settings.get("follow");
    if item.is_none() && follow.is_none() {
        return TokenStream::new();
    }
    let rule = Rule {
        css: match follow {
            Some(Value::Text(css)) => Some(css.clone()),
            _ => None,
        },
        allow: Vec::new(),
        deny: Vec::new(),
        follow: follow.is_some(),
        parse: match item {
            Some(Value::Type(path)) => Some(path.clone()),
            _ => None,
        },
        priority: 0,
        files: false,
        impersonate: None,
        render: None,
        wait_for: None,
        scroll: false,
        click: None,
    };
    link_rules(input, &[rule], engine, stages, None)
}

/// The engine `extract = "..."` asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    Auto,
    Dom,
    Stream,
}

/// The `Spider` impl of a spider with `rule(...)`s: the rules as constant data, compiled
/// once per process in a `static`, with a `Read` per rule that parses (its item type,
/// turned into the spider's: `item`, or the one type the rules parse); `parse` and
/// `sitemap_request` go through them; the item's checks and key, then `stages`, its
/// pipeline. Rules of several item types are read with the DOM.
fn link_rules(
    input: &syn::DeriveInput,
    rules: &[Rule],
    engine: Engine,
    stages: &[syn::Expr],
    item: Option<&syn::Path>,
) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let types = super::rule::item_types(rules);
    let parsed = item.or_else(|| types.first().copied());
    let engine = if types.len() > 1 { Engine::Dom } else { engine };
    let item = match parsed {
        Some(path) => quote!(#path),
        None => quote!(::spiderling::__private::Nothing),
    };
    // Each rule's read spanned at its type: one that is not an Item, or not the spider's
    // item (`From`), is an error there.
    let reads = rules.iter().map(|rule| match &rule.parse {
        Some(path) => quote_spanned! {path.span()=>
            ::core::option::Option::Some(::spiderling::__private::Read::<#item>::of::<#path>())
        },
        None => quote!(::core::option::Option::None),
    });
    let table = rules.iter().map(|rule| {
        let css = match &rule.css {
            Some(css) => quote!(#css),
            None => quote!(::spiderling::__private::DEFAULT_LINKS),
        };
        let Rule { allow, deny, follow, priority, files, .. } = rule;
        let parse = rule.parse.is_some();
        let impersonate = match &rule.impersonate {
            Some(variant) => {
                quote!(::core::option::Option::Some(::spiderling::__private::Impersonate::#variant))
            }
            None => quote!(::core::option::Option::None),
        };
        let render = match &rule.render {
            Some(variant) => quote!(::core::option::Option::Some(::spiderling::__private::Render::#variant)),
            None => quote!(::core::option::Option::None),
        };
        let wait_for = match &rule.wait_for {
            Some(css) => quote!(::core::option::Option::Some(#css)),
            None => quote!(::core::option::Option::None),
        };
        let click = match &rule.click {
            Some(css) => quote!(::core::option::Option::Some(#css)),
            None => quote!(::core::option::Option::None),
        };
        let scroll = rule.scroll;
        quote! {
            ::spiderling::__private::LinkRule {
                css: #css,
                allow: &[#(#allow),*],
                deny: &[#(#deny),*],
                follow: #follow,
                parse: #parse,
                priority: #priority,
                files: #files,
                impersonate: #impersonate,
                render: #render,
                wait_for: #wait_for,
                scroll: #scroll,
                click: #click,
            }
        }
    });
    // The item's checks spanned at its type, as the parse is: a type that is not an Item
    // is an error there, not at the derive.
    let checked = match parsed {
        Some(path) => quote_spanned!(path.span()=> ::spiderling::Stages::<#path>::checked()),
        None => quote!(::spiderling::Stages::checked()),
    };
    // Each stage spanned at the user's value: one that is no `Pipeline` of the item is
    // an error there.
    let stages = stages.iter().map(|stage| quote_spanned!(stage.span()=> .then(#stage)));
    let engine_value = match engine {
        Engine::Auto => quote!(Auto),
        Engine::Dom => quote!(Dom),
        Engine::Stream => quote!(Stream),
    };
    // Forced streaming: the rules' selectors were checked where they are written; the
    // item's are known to its own derive, so its verdict is checked here, at the type.
    let item_streams = match (engine, types.first()) {
        (Engine::Stream, Some(path)) => quote_spanned! {path.span()=>
            const _: () =
                if let ::core::result::Result::Err(why) = <#path as ::spiderling::__private::Item>::STREAM {
                    ::core::panic!("{}", why)
                };
        },
        _ => TokenStream::new(),
    };
    quote! {
        #item_streams
        const LINK_RULES: &[::spiderling::__private::LinkRule] = &[#(#table),*];
        const READS: &[::core::option::Option<::spiderling::__private::Read<#item>>] = &[#(#reads),*];
        static COMPILED_LINK_RULES: ::spiderling::__private::LazyLock<::spiderling::__private::LinkRules> =
            ::spiderling::__private::LazyLock::new(|| {
                ::spiderling::__private::LinkRules::new(
                    LINK_RULES,
                    ::spiderling::__private::Engine::#engine_value,
                )
            });

        #[::spiderling::async_trait]
        impl #impl_generics ::spiderling::Spider for #ident #type_generics #where_clause {
            type Item = #item;

            async fn parse(
                &self,
                page: ::spiderling::Page,
                cx: &mut ::spiderling::Cx<Self::Item>,
            ) -> ::spiderling::Result {
                ::spiderling::__private::parse_by_link_rules(page, cx, &COMPILED_LINK_RULES, READS).await
            }

            fn sitemap_request(
                &self,
                url: ::spiderling::url::Url,
            ) -> ::core::option::Option<::spiderling::Request> {
                COMPILED_LINK_RULES.sitemap_request(url)
            }

            fn impersonate(
                &self,
                request: &::spiderling::Request,
            ) -> ::core::option::Option<::spiderling::__private::Impersonate> {
                COMPILED_LINK_RULES.impersonate(request)
            }

            fn rendering(&self, request: &::spiderling::Request) -> ::spiderling::__private::Rendering {
                COMPILED_LINK_RULES.rendering(request, READS)
            }

            fn pipeline(&self) -> ::spiderling::Stages<Self::Item, impl ::spiderling::Record> {
                #checked #(#stages)*
            }
        }
    }
}

/// Beside compile errors: an impl that keeps the user's other code free of follow-on
/// "trait not implemented" errors.
pub(crate) fn stub(input: &syn::DeriveInput) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics ::spiderling::SpiderConfig for #ident #type_generics #where_clause {
            fn config(&self) -> ::spiderling::Config {
                ::spiderling::Config::default()
            }
        }
    }
}

fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
