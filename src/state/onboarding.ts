/**
 * The first-visit explanation: open until the person dismisses it, then out
 * of the way (remembered in localStorage) until they ask for it again.
 */
import { create } from 'zustand';

export const INTRO_DISMISSED_KEY = 'pipelab.introDismissed';

/** localStorage where the page may use it; null where it is blocked (private modes, sandboxed frames, Node). */
function storage(): Storage | null {
  try {
    return typeof localStorage === 'undefined' ? null : localStorage;
  } catch {
    return null;
  }
}

export function introDismissed(store: Pick<Storage, 'getItem'> | null = storage()): boolean {
  try {
    return store?.getItem(INTRO_DISMISSED_KEY) === '1';
  } catch {
    return false;
  }
}

export function rememberIntroDismissed(dismissed: boolean, store: Pick<Storage, 'setItem' | 'removeItem'> | null = storage()): void {
  try {
    if (dismissed) store?.setItem(INTRO_DISMISSED_KEY, '1');
    else store?.removeItem(INTRO_DISMISSED_KEY);
  } catch {
    // Not remembered: the explanation shows again next visit.
  }
}

export interface OnboardingState {
  introOpen: boolean;
  glossaryOpen: boolean;
  dismissIntro(): void;
  openIntro(): void;
  setGlossaryOpen(open: boolean): void;
}

export const useOnboarding = create<OnboardingState>()((set) => ({
  introOpen: !introDismissed(),
  glossaryOpen: false,
  dismissIntro: () => {
    rememberIntroDismissed(true);
    set({ introOpen: false, glossaryOpen: false });
  },
  openIntro: () => {
    rememberIntroDismissed(false);
    set({ introOpen: true });
  },
  setGlossaryOpen: (glossaryOpen) => set({ glossaryOpen }),
}));
