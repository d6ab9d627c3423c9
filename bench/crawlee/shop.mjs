// Crawlee's PlaywrightCrawler on the sandbox's client-rendered shop, doing what the
// rendered bench's Spiderling spider does: every page in the browser, the listing's
// "load more" clicked until it is gone, each product's name and price once it appears,
// images, fonts and media refused, items to a JSON Lines file.
//
//   node shop.mjs --url URL --output OUT.jsonl --concurrency C
//
// Run by `spiderling bench --rendered --crawlee shop.mjs` (see run.sh), which serves the
// shop and measures this process tree as it measures Spiderling's.
import { appendFileSync } from 'node:fs';
import { PlaywrightCrawler, playwrightUtils, log } from 'crawlee';

const arg = (name) => {
    const at = process.argv.indexOf(name);
    if (at < 0 || at + 1 >= process.argv.length) throw new Error(`${name} is needed`);
    return process.argv[at + 1];
};
const [url, output, concurrency] = [arg('--url'), arg('--output'), Number(arg('--concurrency'))];
log.setLevel(log.LEVELS.WARNING);

const crawler = new PlaywrightCrawler({
    maxConcurrency: concurrency,
    minConcurrency: concurrency,
    maxRequestRetries: 3,
    requestHandlerTimeoutSecs: 30,
    launchContext: {
        launchOptions: {
            executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
            args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
        },
    },
    preNavigationHooks: [
        async ({ page }) => {
            await playwrightUtils.blockRequests(page, { urlPatterns: ['.png', '.jpg', '.gif', '.woff', '.woff2', '.ico', '.mp4'] });
        },
    ],
    async requestHandler({ page, request, enqueueLinks }) {
        const path = new URL(request.url).pathname;
        if (/^\/(product|plain)\/\d+$/.test(path)) {
            await page.waitForSelector('h1.name', { timeout: 15000 });
            const name = await page.textContent('h1.name');
            const price = await page.textContent('p.price');
            appendFileSync(output, JSON.stringify({ url: request.url, name, price }) + '\n');
            return;
        }
        if (path === '/list/') {
            await page.waitForSelector('a.product', { timeout: 15000 });
            for (let clicks = 0; clicks < 50; clicks++) {
                const more = await page.$('button.more');
                if (!more) break;
                const before = await page.$$eval('a.product', (links) => links.length);
                await more.click();
                await page.waitForFunction((n) => document.querySelectorAll('a.product').length > n
                    || !document.querySelector('button.more'), before, { timeout: 15000 });
            }
        }
        await enqueueLinks({ selector: 'a.product, a.plain, a[href="/list/"], a[href="/plain/"]' });
    },
});

await crawler.run([url]);
