"""The built-in inputs of minifloat.eval, written for this package (no download): sentences for encoders, and a text
of a few thousand tokens in plain English prose for causal language models."""

SENTENCES = [
    "The river rose overnight and covered the lower road to the mill.",
    "A small boat was tied to the post at the end of the wooden pier.",
    "She counted the coins twice before she paid the baker for the bread.",
    "Heavy rain is expected in the northern valleys on Thursday afternoon.",
    "The committee approved the new budget after a long and tiring debate.",
    "Most cats sleep for more than twelve hours in a single day.",
    "The old clock in the hall stopped at a quarter past three.",
    "Prices of wheat and barley fell sharply after the good harvest.",
    "He learned to play the violin from his grandmother when he was six.",
    "The train to the coast leaves from the second platform every hour.",
    "A matrix multiplication adds up the products of rows and columns.",
    "Floating point numbers trade precision for a wide range of values.",
    "The doctor asked him to rest his injured knee for two weeks.",
    "Children ran across the field to watch the balloon rise into the sky.",
    "The library will be closed on Monday for the public holiday.",
    "Fresh snow fell on the mountain pass and the road was closed.",
    "The recipe calls for two eggs, a cup of flour and some butter.",
    "Our team finished the project a week earlier than planned.",
    "The lighthouse keeper wrote the weather in his log every evening.",
    "A quiet street is a good place to learn to ride a bicycle.",
    "The museum bought a painting of ships in a harbour at dawn.",
    "Compilers turn source code into instructions a processor can run.",
    "The farmer mended the fence before the sheep were let out.",
    "Bright stars were visible once the clouds moved to the east.",
]

TEXT = """\
The Keeper of the Northern Light

On the last rock of the northern coast there stood a lighthouse, white once and now the colour of old bone, and in
it lived a keeper named Thomas Avery. He had come there as a young man, meaning to stay a single winter, and he had
stayed for thirty-one years. The rock was a mile from the shore at low tide and two miles at high, for the sea came
in over a long flat of sand and weed, and twice a day the island was an island indeed.

Every evening at sunset Thomas climbed the one hundred and twelve steps of the tower, trimmed the wick, polished the
great lens until it shone like water, and lit the lamp. Then he sat at the small table by the window and wrote in
his log: the hour, the wind, the state of the sea, the ships he had seen pass and the ones he had only heard. The
log books filled a shelf, and then a second shelf, and then a chest beneath the bed. He did not think anyone would
read them, but he wrote them carefully all the same, because a thing done carefully is a thing done twice, once for
the doing and once for the remembering.

The nearest village was called Harlow. It had a church, a school with one room, a shop that sold everything from
rope to sugar, and a harbour where eleven fishing boats were kept. Once a fortnight a boy rowed out from Harlow with
oil for the lamp, flour, salt, tea, letters and the newspaper, and rowed back with whatever Thomas needed mended or
posted. For many years the boy was called Peter, and then Peter grew up and went to sea, and his younger brother
William took the oars, and after William came a girl named Ruth, who rowed better than either of them.

Ruth was curious about everything. She asked why the lens had so many rings of glass, and Thomas showed her how each
ring bent the light a little more than the one inside it, so that all the light of a small flame was gathered into a
single beam that could be seen twenty miles away. She asked why the light turned, and he showed her the clockwork in
the base of the lamp room, the heavy weight that ran down a long shaft through the middle of the tower, and the
governor with its two brass balls that spun outward when the machine ran too fast and slowed it down again. She asked
why every lighthouse on the coast flashed in a different pattern, and he told her that a sailor who sees a light in
the dark must know which light it is, or the light is worse than none at all.

"A light that tells you nothing," he said, "only tells you that there is land somewhere. A light that tells you its
name tells you where you are."

In the autumn of the year the storms came early. The first one arrived on a Tuesday in the middle of October, with a
falling glass and a sky the colour of slate. By noon the wind had gone round to the north-east and the sea was
breaking white over the outer reef. By evening the spray was reaching the lamp room windows, one hundred feet above
the rock, and the whole tower hummed like a plucked string whenever a great wave struck its foot.

Thomas lit the lamp at four o'clock, an hour before sunset, because the day had grown so dark. He wound the clockwork
and watched the beam begin its slow turn across the water. Then he heard, under the noise of the wind, a sound he did
not expect: the short, hoarse blast of a ship's horn, three times, and then three times again. It came from the
south, from the channel between the rock and the shore, where no ship of any size should have been.

He took his glass to the south window. Through the rain he could make out a light, low on the water, rising and
falling with the swell. It was a small coaster, the kind that carried coal and timber along the coast, and it was
much too close to the sands. Its master must have mistaken the channel for open water, or lost his bearings in the
storm, or lost his engine altogether. The tide was falling. In an hour the channel would be a flat of wet sand with
the sea breaking across it, and any ship caught there would be broken in pieces.

There was no boat on the rock. There was no telegraph and no telephone. There was the light, and there was Thomas.

He thought about it for perhaps a minute, which was a long time in a storm. Then he went down to the lamp room below
the lantern, where the spare parts were kept, and took out the old signal lamp that had been used before the great
lens was installed. It had a shutter that could be opened and closed by hand. He carried it up to the gallery, the
narrow iron walk that ran around the outside of the lantern, and he tied himself to the rail with a length of rope,
because the wind would otherwise have taken him off the tower like a leaf.

Then he began to signal. He did not know whether anyone on the coaster could read the code, but he sent the same
short message again and again: the channel is closing; steer west; the deep water is west. Long and short, long and
short, his fingers numb on the shutter and the rain driving into his eyes. Below him the great beam swept round and
round, and each time it passed over the little ship he could see figures on her deck, and each time they seemed no
nearer to safety.

He signalled for forty minutes. Then, at last, he saw the coaster's bow swing slowly round toward the west. Her
master had understood, or had guessed, or had simply seen the white water ahead and turned away from it. She crept
past the end of the sands with the waves breaking over her stern, and then she was in deep water, and then her
lights were growing smaller in the rain, and then they were gone behind the headland where the harbour of Harlow lay.

Thomas untied himself, went inside, and sat down on the floor of the lamp room for a long time without moving. Then
he got up, because the clockwork needed winding again, and because the log had to be written.

He wrote: "Wind north-east, force nine, rising. Sea very high. Glass falling. At four forty a coaster in the south
channel, sounding her horn. Signalled her by hand lamp to steer west. She cleared the sands at five twenty and made
for Harlow. Lamp lit at four. All well."

Three days later, when the storm had blown itself out, Ruth rowed out with the oil and the flour and the newspaper,
and with a letter from the master of the coaster. His engine had failed, the letter said, and his compass had been
knocked out of true by a sea that came aboard, and he had thought himself in the open channel until he saw the
flashing lamp. He had not been able to read every word, but he had read the word west, and that had been enough.
He thanked the keeper of the northern light, and he enclosed a small sum of money, which Thomas gave to the school at
Harlow to buy books.

Ruth read the letter twice and then looked at the old signal lamp, which was still standing by the door with a pool
of water under it.

"Were you afraid?" she asked.

"Yes," said Thomas. "But the lamp does not care whether I am afraid. It only cares whether it is lit."

In the years that followed, many things changed on the northern coast. An engineer came from the city and put an
electric lamp into the lantern, and a diesel engine in a shed at the foot of the tower to drive it, and the clockwork
with its weight and its brass governor was taken away to a museum. A radio was installed, so that the keeper could
speak to the coastguard and to the ships. The boats of Harlow were fitted with engines, and then with radios of their
own, and then with instruments that could tell a master where his ship was to within a few yards, by listening to
signals sent from stations far inland.

Thomas learned each new machine as it came, because a keeper must understand everything in his tower, and because
he liked to understand things. He found that the new lamp was brighter than the old one, and that it never needed
trimming, but that it had to be watched in a different way. The old flame had told him when it was unhappy: it
smoked, or it flickered, or it burned with a yellow edge. The new lamp simply went out, without any warning at all,
when a fuse failed or the engine stopped. So he learned to listen to the engine instead, and to know by its sound
when something was about to go wrong, just as he had once known the flame by its colour.

Ruth grew up and went away to study at a college in the city, and wrote him long letters about what she was
learning. She wrote about the way light travels and bends, and about the lenses of telescopes and microscopes, which
were cousins of the great lens in his lantern. She wrote about numbers, and how a machine could be taught to count
and to calculate, and how every number such a machine holds must be kept in a fixed number of small switches, so
that some numbers can be held exactly and others only nearly. A good engineer, she wrote, must always know how near
is near enough.

Thomas thought about that for a long time. He thought that it was true of many things besides numbers. A chart is
not the coast, but a good chart is near enough to steer by. A log book is not the weather, but a careful log is near
enough to learn from. A light seen twenty miles off is only a small point in the dark, but it is near enough to tell
a sailor where he is, and that is all a light is for.

When he was sixty-three years old, the lighthouse service wrote to say that the light was to be made automatic. A
machine would switch the lamp on at dusk and off at dawn, and would send a signal to the coastguard if anything
failed. There would be no need for a keeper any more. The letter thanked him for his long service and offered him a
small house in Harlow and a pension.

He stayed until the last night. At sunset he climbed the one hundred and twelve steps, more slowly now than he once
had, and stood in the lantern while the new machine switched on the lamp by itself. He watched the beam begin to
turn. Then he went down to the table by the window and wrote in the log for the last time.

"Wind west, light. Sea calm. Glass steady. Lamp lit at seven by the automatic switch. Two fishing boats returning to
Harlow, one coaster bound north. All well."

He closed the book and put it with the others in the chest beneath the bed, and in the morning Ruth, who had come
home for the summer, rowed out at low tide to bring him and the chest and the old signal lamp to the shore.

The light still turns on the last rock of the northern coast. No one lives there now, and the white paint is the
colour of old bone again. But if you sail past on a dark night you will see it flash its own pattern, the same one it
has always flashed, telling every ship on that sea its name, so that every master who sees it will know where he is.

In the small museum at Harlow, beside the old clockwork with its brass governor, there is a glass case that holds a
signal lamp with a hand shutter, and beside it an open log book. The visitors who stop to read it see a page written
in a careful hand: the wind, the sea, the glass, a coaster in the south channel, a lamp signal sent by hand, and at the
end of the entry, as at the end of every other, two words. All well.
"""
