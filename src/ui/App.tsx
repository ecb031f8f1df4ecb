export function App() {
  return (
    <main>
      <h1>PipeLab</h1>
      <p>Pipeline-parallel training in your browser.</p>
    </main>
  );
}
