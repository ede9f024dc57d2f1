// Light and dark: the system's preference unless the "Dark theme" toggle chose one, which is
// remembered in localStorage. The toggle's aria-pressed says which theme shows.
const THEME_KEY = "conversation-console-theme";
const darkQuery = matchMedia("(prefers-color-scheme: dark)");

/** The chosen theme ("light", "dark") or null to follow the system. */
function storedTheme() {
  try {
    const v = localStorage.getItem(THEME_KEY);
    return v === "light" || v === "dark" ? v : null;
  } catch {
    // Storage disabled: the system's preference applies, nothing is lost.
    return null;
  }
}

/** Shows the remembered or the system's theme, and keeps `toggle` in step with it. */
export function startTheme(toggle) {
  const apply = () => {
    const chosen = storedTheme();
    if (chosen) document.documentElement.dataset.theme = chosen;
    else delete document.documentElement.dataset.theme;
    const dark = (chosen ?? (darkQuery.matches ? "dark" : "light")) === "dark";
    toggle.setAttribute("aria-pressed", String(dark));
  };
  toggle.addEventListener("click", () => {
    const next = toggle.getAttribute("aria-pressed") === "true" ? "light" : "dark";
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch {
      // Storage disabled: the theme changes for this page, it is just not remembered.
    }
    document.documentElement.dataset.theme = next;
    toggle.setAttribute("aria-pressed", String(next === "dark"));
  });
  darkQuery.addEventListener("change", apply);
  apply();
}
