import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './ui/App.tsx';
import { installAutomation } from './runtime/automation.ts';
import { initStateFromUrl } from './state/init.ts';
import { automationSession } from './state/store.ts';
import './ui/styles.css';

installAutomation(automationSession);
initStateFromUrl();

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');
createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
