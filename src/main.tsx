import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './ui/App.tsx';
import { installAutomation } from './automation/automation.ts';
import { initStateFromUrl } from './state/init.ts';
import { automationSession } from './state/store/index.ts';
import { urlConfigOf } from './state/store/index.ts';
import { registerTextForAutomation } from './state/text/index.ts';
import './ui/styles.css';
import './ui/layout.css';
import './ui/onboarding/intro.css';

installAutomation({ readUrl: urlConfigOf, session: automationSession, loadText: registerTextForAutomation });
initStateFromUrl();

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');
createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
