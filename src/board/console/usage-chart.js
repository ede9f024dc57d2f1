// One stacked bar chart of the Usage view, drawn by uPlot (bundled at build: uplot.js). uPlot
// does not stack, so each series is drawn as the sum of its own values and those below it,
// the tallest first: each bar's segments show through in order. The chart is a picture of the
// table beside it (which is what a screen reader reads), so it is one image with a name. Its
// ink and grid are the theme's, read from the page, and it is drawn again when the theme or
// its width changes.
import uPlot from "./uplot.js";

/** Eight hues told apart in both themes and by most colour-blind eyes (Okabe and Ito). */
export const PALETTE = [
  "#0072b2",
  "#e69f00",
  "#009e73",
  "#cc79a7",
  "#56b4e9",
  "#d55e00",
  "#f0e442",
  "#999999",
];

const HEIGHT = 220;
const DAY_MS = 86_400_000;
/** Steps between the x axis's labels, in days. */
const DAY_STEPS = [1, 2, 7, 14, 28, 56, 91, 182, 364];

/**
 * Draws into `box` (emptied) the stacked bars of `days` (YYYY-MM-DD, ascending) with one
 * series per key of `stacks` ({ name, values[] }, bottom first); `format` labels the y axis.
 * Returns `{ destroy }`.
 */
export function stackedBars(box, days, stacks, format) {
  box.replaceChildren();
  if (days.length === 0) return { destroy() {} };
  // Days as whole numbers (days since 1970-01-01 of the day's name), not instants: a day is the
  // report's, in the report's zone, and its label is its name whatever the browser's zone.
  const xs = days.map((d) => Date.parse(`${d}T00:00:00Z`) / DAY_MS);
  const sums = [];
  let running = days.map(() => 0);
  for (const s of stacks) {
    running = running.map((v, i) => v + (s.values[i] ?? 0));
    sums.push(running);
  }
  const order = stacks.map((_, i) => i).reverse();
  const colours = () => {
    const style = getComputedStyle(box);
    return { ink: style.color, line: style.borderTopColor };
  };
  const make = () => {
    const { ink, line } = colours();
    const axis = {
      stroke: ink,
      grid: { stroke: line, width: 1 },
      ticks: { stroke: line, width: 1 },
    };
    return new uPlot(
      {
        width: Math.max(200, box.clientWidth),
        height: HEIGHT,
        legend: { show: false },
        cursor: { show: false },
        select: { show: false },
        scales: {
          x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] },
          y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.05 : 1] },
        },
        axes: [
          {
            ...axis,
            space: 56,
            incrs: DAY_STEPS,
            values: (_u, ticks) =>
              ticks.map((t) => new Date(t * DAY_MS).toISOString().slice(5, 10)),
          },
          { ...axis, size: 64, values: (_u, ticks) => ticks.map(format) },
        ],
        series: [
          {},
          ...order.map((i) => ({
            label: stacks[i].name,
            stroke: PALETTE[i % PALETTE.length],
            fill: PALETTE[i % PALETTE.length],
            width: 0,
            points: { show: false },
            paths: uPlot.paths.bars({ size: [0.8, 48], gap: 1 }),
          })),
        ],
      },
      [xs, ...order.map((i) => sums[i])],
      box,
    );
  };
  let plot = make();
  const redraw = () => {
    plot.destroy();
    plot = make();
  };
  const resize = new ResizeObserver(() => {
    const width = Math.max(200, box.clientWidth);
    if (width !== plot.width) plot.setSize({ width, height: HEIGHT });
  });
  resize.observe(box);
  // The theme toggle sets data-theme; the system's preference changes prefers-color-scheme.
  const themed = new MutationObserver(redraw);
  themed.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  const scheme = matchMedia("(prefers-color-scheme: dark)");
  scheme.addEventListener("change", redraw);
  return {
    destroy() {
      resize.disconnect();
      themed.disconnect();
      scheme.removeEventListener("change", redraw);
      plot.destroy();
    },
  };
}
