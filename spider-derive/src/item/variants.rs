//! `#[derive(Item)]` on an enum: an item of several types, one per variant, each a type
//! deriving Item itself, `enum Found { Book(Book), Review(Review) }`. It is the item of a
//! spider whose rules parse pages into several types (`item = Found`): each variant is
//! made `From` its type, its checks and key are its type's (the key kept apart per type),
//! and it reads a page as the first of its types the page holds whole (a page that holds
//! one in part and none whole is that part's error).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::errors::Errors;

pub(crate) fn derive(input: &syn::DeriveInput, data: &syn::DataEnum) -> TokenStream {
    let mut errors = Errors::default();
    let ident = &input.ident;
    if !input.generics.params.is_empty() {
        errors.at(
            &input.generics,
            "#[derive(Item)] does not take generic enums; give the variants concrete types",
        );
    }
    if data.variants.is_empty() {
        errors.at(
            ident,
            "an enum of items needs a variant per item type, such as `enum Found { Book(Book), \
            Review(Review) }`",
        );
    }
    let mut variants: Vec<(&syn::Ident, &syn::Type)> = Vec::new();
    for variant in &data.variants {
        match &variant.fields {
            syn::Fields::Unnamed(fields) if fields.unnamed.len() == 1 => {
                let ty = &fields.unnamed[0].ty;
                let spelled = quote!(#ty).to_string();
                if variants.iter().any(|(_, seen)| quote!(#seen).to_string() == spelled) {
                    errors.at(
                        ty,
                        format!("another variant holds `{spelled}` already; give each item type one variant"),
                    );
                } else {
                    variants.push((&variant.ident, ty));
                }
            }
            _ => errors.at(
                variant,
                format!(
                    "each variant holds one item type, such as `{0}({0})`, with `{0}` deriving Item",
                    variant.ident
                ),
            ),
        }
    }
    if let Some(compile_errors) = errors.into_compile_errors() {
        let stub = super::expand::stub(input);
        return quote! { #compile_errors #stub };
    }
    let p = quote!(::spiderling::__private);
    let froms = variants.iter().map(|(variant, ty)| {
        quote_spanned! {ty.span()=>
            impl ::core::convert::From<#ty> for #ident {
                fn from(item: #ty) -> Self {
                    #ident::#variant(item)
                }
            }
        }
    });
    // A type that is not an Item is an error at the variant's type.
    let extracts = variants.iter().map(|(variant, ty)| {
        quote_spanned! {ty.span()=>
            match <#ty as #p::Item>::extract(doc) {
                ::core::result::Result::Ok(::core::option::Option::Some(item)) => {
                    return ::core::result::Result::Ok(::core::option::Option::Some(#ident::#variant(item)));
                }
                ::core::result::Result::Ok(::core::option::Option::None) => {}
                ::core::result::Result::Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
    });
    let checks = variants
        .iter()
        .map(|(variant, ty)| quote!(#ident::#variant(item) => <#ty as #p::Item>::check(item),));
    let keys = variants.iter().map(|(variant, ty)| {
        let name = variant.to_string();
        quote!(#ident::#variant(item) => <#ty as #p::Item>::key(item).map(|key| key.within(#name)),)
    });
    quote! {
        const _: () = {
            #(#froms)*

            impl #p::Item for #ident {
                const STREAM: ::core::result::Result<&'static [#p::FieldRead], &'static str> =
                    ::core::result::Result::Err("an enum of items reads the DOM");

                fn extract(
                    doc: &#p::Document<'_>,
                ) -> ::core::result::Result<::core::option::Option<Self>, #p::ExtractError> {
                    let mut first_error = ::core::option::Option::None;
                    #(#extracts)*
                    match first_error {
                        ::core::option::Option::Some(error) => ::core::result::Result::Err(error),
                        ::core::option::Option::None => {
                            ::core::result::Result::Ok(::core::option::Option::None)
                        }
                    }
                }

                fn check(&self) -> ::core::result::Result<(), #p::Dropped> {
                    match self {
                        #(#checks)*
                    }
                }

                fn key(&self) -> ::core::option::Option<#p::ItemKey> {
                    match self {
                        #(#keys)*
                    }
                }
            }
        };
    }
}
