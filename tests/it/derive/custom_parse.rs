use spiderling::prelude::*;

#[derive(Item, Serialize)]
struct Book {
    #[css("h1")]
    title: String,
}

#[derive(Spider, Default)]
#[spider(start_urls = ["https://books.example/"])]
struct Books;

#[async_trait]
impl Spider for Books {
    type Item = Book;

    async fn parse(&self, page: Page, cx: &mut Cx<Book>) -> Result {
        if let Some(book) = page.extract::<Book>().await? {
            cx.emit(book);
        }
        Ok(())
    }
}

pub(crate) fn main() {
    let _ = Crawler::new(Books);
}
